"""``Session.open_file`` / ``open_tar``: downloads in chunks, stopped at their cap."""

from __future__ import annotations

import io
import os
import tarfile
import threading
import time
from collections.abc import Callable

import pytest

from assay.sessions import Download, DownloadTooLarge, Session, SessionLimits
from assay.sessions._download import Pace

MiB = 1 << 20
ROOMY = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=128)


def test_a_file_comes_in_bounded_chunks(open_session: Callable[..., Session]) -> None:
    s = open_session(limits=ROOMY)
    s.exec("head -c 5000000 /dev/urandom > r.bin")
    download = s.open_file("r.bin")
    chunks = list(download)
    assert download.size == 5_000_000
    assert max(len(c) for c in chunks) <= MiB
    assert b"".join(chunks) == s.read_file("r.bin")


def test_a_download_that_grows_past_its_cap_while_read_is_cut_off() -> None:
    # The size is checked before the first byte, but a file may grow after that: the
    # reader stops at the cap, and closing its end ends the writer (EPIPE), not a hang.
    ended: list[BaseException] = []

    def send(fd: int) -> None:
        try:
            with os.fdopen(fd, "wb", buffering=0) as out:
                for _ in range(64):
                    out.write(b"g" * MiB)
        except BrokenPipeError as exc:
            ended.append(exc)

    download = Download("grow.bin", MiB // 2, send, limit=MiB)
    got = 0
    with pytest.raises(DownloadTooLarge, match=r"grow\.bin"):
        for chunk in download:
            got += len(chunk)
    assert got <= MiB
    assert len(ended) == 1  # the writer saw the reader go away


def test_a_tar_over_the_cap_is_refused_before_a_byte(
    open_session: Callable[..., Session],
) -> None:
    s = open_session(limits=ROOMY)
    s.write_file("d/a.bin", b"a" * MiB)
    with pytest.raises(DownloadTooLarge, match="more than the download cap of 1000 bytes"):
        s.open_tar("d", max_bytes=1000)
    data = b"".join(s.open_tar("d"))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert [m.name for m in tar] == ["a.bin"]


def test_an_abandoned_download_leaves_the_session_usable(
    open_session: Callable[..., Session],
) -> None:
    s = open_session(limits=ROOMY)
    s.exec("head -c 20000000 /dev/zero > z.bin")
    download = s.open_file("z.bin")
    next(iter(download))
    download.close()  # the client went away after one chunk
    assert s.exec("echo still").stdout == b"still\n"


def test_downloads_together_keep_to_one_pace() -> None:
    # Two readers of one pace of 8 MiB/s take 4 MiB in about 0.5 s, not at once.
    pace = Pace(8 * MiB)
    started = time.monotonic()
    readers = [threading.Thread(target=lambda: [pace.take(MiB) for _ in range(2)]) for _ in "ab"]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    took = time.monotonic() - started
    assert 0.35 < took < 3.0, took  # the first chunk goes at once: 3 of 4 are paced
