"""The on-disk compile cache: hits across runners, integrity, LRU bound, concurrent writers."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from assay import Runner
from assay.languages.cache import CompileCache

C_HELLO = '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n'


def key(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def test_put_get_roundtrip_and_miss(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    assert cache.get(key(1)) is None
    cache.put(key(1), b"artefact")
    assert cache.get(key(1)) == b"artefact"
    assert (cache.hits, cache.misses) == (1, 1)


def test_a_tampered_artefact_is_a_miss_and_removed(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    cache.put(key(2), b"good binary")
    path = tmp_path / key(2)[:2] / key(2)
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 0xFF
    path.write_bytes(bytes(blob))
    assert cache.get(key(2)) is None
    assert not path.exists()


def test_keys_must_be_hex_digests(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def test_least_recently_used_entries_are_evicted(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path, max_bytes=1000)
    for n in range(3):
        cache.put(key(n), bytes(300))
        time.sleep(0.02)
    os.utime(tmp_path / key(0)[:2] / key(0))  # 0 was used most recently
    cache.put(key(3), bytes(300))  # over the bound: evict down to 900 bytes
    present = {n for n in range(4) if cache.get(key(n)) is not None}
    assert 0 in present and 3 in present and len(present) <= 3
    assert 1 not in present


def test_concurrent_writers_of_one_key_leave_a_whole_file(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    data = os.urandom(200_000)
    threads = [threading.Thread(target=cache.put, args=(key(9), data)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.get(key(9)) == data
    assert not [p for p in (tmp_path / key(9)[:2]).iterdir() if p.name.startswith(".tmp-")]


def test_a_second_runner_reuses_the_artefact_without_compiling(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cc"
    with Runner(compile_cache=CompileCache(cache_dir)) as first:
        assert first.run(C_HELLO, "c").stdout == b"hi\n"
    with Runner(compile_cache=CompileCache(cache_dir)) as second:
        calls: list[object] = []
        original = second.sandbox.execute

        def counting(req):  # type: ignore[no-untyped-def]
            calls.append(req)
            return original(req)

        second.sandbox.execute = counting  # type: ignore[method-assign]
        assert second.run(C_HELLO, "c").stdout == b"hi\n"
        assert len(calls) == 1, "only the run itself, no compile"
        assert second.compile_cache.hits == 1
