"""Execution records: schema, local JSONL writer (rotation, kills, threads), remote writer."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import get_type_hints

import fsspec
import pyarrow as pa
import pytest
from _telemetry import NOON, MakeRecord

from assay.telemetry import (
    RECORD_VERSION,
    SCHEMA,
    FsspecWriter,
    JsonlWriter,
    MemoryWriter,
    NullWriter,
    Record,
    RecordLimits,
    RecordTest,
    RecordWriter,
    _jsonl,
    iter_records,
    open_writer,
    records,
    to_table,
)
from assay.telemetry._store import Store

NAME_RE = re.compile(r"^records-(\d{8})-(\d{6})-(\d+)-(\d+)\.jsonl$")


def segments(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if NAME_RE.match(p.name))


def raw_lines(directory: Path) -> list[bytes]:
    return [line for p in segments(directory) for line in p.read_bytes().splitlines(True)]


# --- the record and its schema ----------------------------------------------------------------


def test_schema_has_exactly_the_record_fields_in_order() -> None:
    assert SCHEMA.names == list(get_type_hints(Record))
    limits = SCHEMA.field("limits").type
    assert [limits.field(i).name for i in range(limits.num_fields)] == list(
        get_type_hints(RecordLimits)
    )
    test = SCHEMA.field("tests").type.value_type
    assert [test.field(i).name for i in range(test.num_fields)] == list(get_type_hints(RecordTest))


def test_schema_types_follow_the_record_types() -> None:
    """Each field's Arrow type comes from its Python type: ``X | None`` is a nullable X, a
    list of a TypedDict a list of structs; a type with no Arrow form is refused by name."""
    assert SCHEMA.field("deadline_at").type == pa.float64()
    assert SCHEMA.field("exit_code").type == pa.int64()
    assert SCHEMA.field("cache_hit").type == pa.bool_()
    assert SCHEMA.field("problem_id").type == pa.string()
    assert SCHEMA.field("limits").type.field("wall_s").type == pa.float64()
    test = SCHEMA.field("tests").type.value_type
    assert test.field("peak_memory_bytes").type == pa.int64()
    assert all(f.nullable for f in SCHEMA)
    assert SCHEMA.metadata == {b"assay.record_version": str(RECORD_VERSION).encode()}
    with pytest.raises(TypeError, match="dict"):
        records._arrow_type(dict[str, int])


def test_record_round_trips_through_jsonl_and_arrow(
    tmp_path: Path, make_record: MakeRecord
) -> None:
    rec = make_record(stdout="line 1\nline 2\n", code="print('é')\n", verdict=None, reward=None)
    with JsonlWriter(tmp_path) as writer:
        writer.write(rec)
    (back,) = iter_records(tmp_path)
    assert back == rec
    assert to_table([back]).to_pylist() == [rec]


def test_a_field_of_the_wrong_type_is_refused_by_the_schema(make_record: MakeRecord) -> None:
    with pytest.raises(Exception, match="many"):
        to_table([make_record(passed="many")])


# --- JsonlWriter ------------------------------------------------------------------------------


def test_segment_name_carries_utc_time_pid_and_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14: local time is already May 2nd
    time.tzset()
    try:
        assert time.strftime("%d", time.localtime(NOON)) == "02"
        with JsonlWriter(tmp_path, clock=lambda: NOON) as writer:
            writer.write({"job_id": "a"})
            current = writer.current
    finally:
        monkeypatch.undo()
        time.tzset()
    assert current is not None
    m = NAME_RE.match(current.name)
    assert m is not None
    assert (m.group(1), m.group(2), int(m.group(3))) == ("20240501", "120000", os.getpid())


def test_nothing_is_created_before_the_first_write(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path / "new" / "dir")
    writer.close()
    writer.close()  # twice is fine
    assert list((tmp_path / "new" / "dir").iterdir()) == []
    with pytest.raises(ValueError, match="closed"):
        writer.write({"job_id": "late"})


def test_rotation_by_size(tmp_path: Path, make_record: MakeRecord) -> None:
    rotated: list[Path] = []
    writer = JsonlWriter(tmp_path, rotate_bytes=4000, on_rotate=rotated.append)
    records = [make_record() for _ in range(40)]
    line = len(_jsonl.encode_record(records[0]))
    for rec in records:
        writer.write(rec)
    writer.close()
    files = segments(tmp_path)
    per_file = -(-4000 // line)  # a segment closes with the write that reaches the limit
    assert len(files) == -(-40 // per_file)
    assert all(p.stat().st_size <= 4000 + line for p in files)
    assert rotated == files[: len(rotated)] and len(rotated) >= len(files) - 1
    assert [r["job_id"] for r in iter_records(tmp_path)] == [r["job_id"] for r in records]


def test_rotation_when_the_utc_date_changes(tmp_path: Path) -> None:
    now = [NOON + 11.9 * 3600]  # 23:54 UTC
    writer = JsonlWriter(tmp_path, clock=lambda: now[0])
    writer.write({"job_id": "before-midnight"})
    now[0] += 600  # 00:04 UTC the next day
    writer.write({"job_id": "after-midnight"})
    writer.close()
    files = segments(tmp_path)
    assert [NAME_RE.match(p.name).group(1) for p in files] == ["20240501", "20240502"]  # type: ignore[union-attr]
    assert [r["job_id"] for r in iter_records(files[1])] == ["after-midnight"]


def test_readers_skip_torn_and_malformed_lines(tmp_path: Path) -> None:
    with JsonlWriter(tmp_path) as writer:
        writer.write({"job_id": "a"})
    (seg,) = segments(tmp_path)
    with seg.open("ab") as f:
        f.write(b'not json\n[1, 2]\n\xff\xfe\n{"job_id": "x"}{"job_id": "y"}\n')
    with JsonlWriter(tmp_path) as writer:
        writer.write({"job_id": "b"})
    last = segments(tmp_path)[-1]
    whole = last.read_bytes()
    with last.open("ab") as f:
        f.write(whole[: len(whole) // 2])  # torn: its writer was killed halfway
    with JsonlWriter(tmp_path) as writer:
        writer.write({"job_id": "c"})
    newest = segments(tmp_path)[-1]
    newest.write_bytes(newest.read_bytes().rstrip(b"\n"))  # only the newline is missing
    assert [r["job_id"] for r in iter_records(tmp_path)] == ["a", "b", "c"]
    assert list(iter_records(tmp_path / "missing")) == []


CHILD = r"""
import sys
from assay.telemetry import FsspecWriter, JsonlWriter

kind, target, spool = sys.argv[1:4]
if kind == "jsonl":
    writer = JsonlWriter(target, rotate_bytes=200_000)
else:
    # No rotation before the kill: the open segment is then certainly left in the spool (a
    # kill landing between an upload and the next segment's first write would leave none).
    writer = FsspecWriter(target, spool_dir=spool, rotate_bytes=1 << 30)
pad = "x" * 30_000
i = 0
while True:
    writer.write({"job_id": f"job-{i}", "seq": i, "pad": pad})
    sys.stdout.write(f"{i}\n")
    sys.stdout.flush()
    i += 1
"""


def run_and_kill(kind: str, target: str, spool: str, at_least: int) -> int:
    """Run a writer process, SIGKILL it mid-stream; return how many writes it acknowledged."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, target, spool],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acked = 0
    for line in proc.stdout:
        acked = int(line) + 1
        if acked >= at_least:
            break
    os.kill(proc.pid, signal.SIGKILL)
    for line in proc.stdout:  # writes acknowledged between our last read and the kill
        acked = int(line) + 1
    assert proc.wait(timeout=30) == -signal.SIGKILL
    return acked


def test_sigkill_loses_at_most_the_record_being_written(tmp_path: Path) -> None:
    acked = run_and_kill("jsonl", str(tmp_path), "", at_least=60)
    seqs = [r["seq"] for r in iter_records(tmp_path)]
    # Every acknowledged write survived, in order; at most one more (written, not yet acked).
    assert seqs == list(range(len(seqs)))
    assert acked <= len(seqs) <= acked + 1
    lines = raw_lines(tmp_path)
    assert len(segments(tmp_path)) > 1  # the kill came after several rotations
    whole = [line for line in lines if line.endswith(b"\n")]
    assert len(whole) == len(seqs) and len(lines) - len(whole) <= 1


def test_concurrent_writes_from_threads_produce_only_whole_lines(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, rotate_bytes=300_000)
    threads, per_thread = 8, 150

    def work(t: int) -> None:
        for i in range(per_thread):
            # Sizes on both sides of PIPE_BUF and of the rotation threshold's granularity.
            writer.write({"job_id": f"t{t}-{i}", "pad": "y" * (i * 97 % 20_000)})

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    writer.close()
    lines = raw_lines(tmp_path)
    assert len(lines) == threads * per_thread
    assert all(line.endswith(b"\n") for line in lines)
    ids = [r["job_id"] for r in iter_records(tmp_path)]
    assert sorted(ids) == sorted(f"t{t}-{i}" for t in range(threads) for i in range(per_thread))
    assert len(segments(tmp_path)) > 1


def test_a_forked_child_writes_its_own_segment(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path)
    writer.write({"job_id": "parent-1"})
    pid = os.fork()
    if pid == 0:  # child: must not append to (or close) the parent's segment
        code = 0
        try:
            writer.write({"job_id": "child"})
            writer.close()
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    writer.write({"job_id": "parent-2"})
    writer.close()
    by_file = {
        int(NAME_RE.match(p.name).group(3)): [r["job_id"] for r in iter_records(p)]  # type: ignore[union-attr]
        for p in segments(tmp_path)
    }
    assert by_file == {os.getpid(): ["parent-1", "parent-2"], pid: ["child"]}


def test_claim_skips_live_segments_and_clears_abandoned_empty_ones(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path)
    writer.write({"job_id": "live"})
    live = writer.current
    assert live is not None
    with _jsonl.claim_segment(live) as claimed:
        assert not claimed
    writer.close()
    with _jsonl.claim_segment(live) as claimed:
        assert claimed
    fresh = tmp_path / _jsonl.segment_name(time.time(), 1, 1)
    stale = tmp_path / _jsonl.segment_name(time.time(), 1, 2)
    fresh.touch()
    stale.touch()
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    for path in (fresh, stale):
        with _jsonl.claim_segment(path) as claimed:
            assert not claimed
    assert fresh.exists() and not stale.exists()


# --- other writers and open_writer ------------------------------------------------------------


def test_memory_and_null_writers(tmp_path: Path, make_record: MakeRecord) -> None:
    mem = MemoryWriter()
    rec = make_record()
    mem.write(rec)
    rec["verdict"] = "changed"  # the writer keeps its own copy
    assert [r["verdict"] for r in mem.records] == ["accepted"]
    mem.close()
    with pytest.raises(ValueError):
        mem.write(rec)
    null = NullWriter()
    null.write(rec)
    null.flush()
    null.close()
    jsonl = JsonlWriter(tmp_path)
    assert all(isinstance(w, RecordWriter) for w in (mem, null, jsonl))
    jsonl.close()


def test_open_writer_picks_the_writer_from_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory_url: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ASSAY_RECORDS", raising=False)
    default = open_writer(None)
    assert isinstance(default, JsonlWriter)
    assert default.directory == tmp_path / "home/.local/share/assay/records"
    monkeypatch.setenv("ASSAY_RECORDS", str(tmp_path / "env"))
    env = open_writer(None)
    assert isinstance(env, JsonlWriter) and env.directory == tmp_path / "env"
    assert isinstance(open_writer(tmp_path / "p"), JsonlWriter)
    file_url = open_writer(f"file://{tmp_path}/u")
    assert isinstance(file_url, JsonlWriter) and file_url.directory == tmp_path / "u"
    remote = open_writer(memory_url)
    assert isinstance(remote, FsspecWriter)
    assert remote.spool_dir.parent == tmp_path / "home/.cache/assay/spool"
    remote.close()
    monkeypatch.setenv("ASSAY_RECORDS", "off")
    assert isinstance(open_writer(None), NullWriter)
    assert isinstance(open_writer("off"), NullWriter)
    assert list(iter_records("off")) == []


# --- FsspecWriter -----------------------------------------------------------------------------


def remote_names(url: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(url)
    return sorted(p.rsplit("/", 1)[-1] for p in fs.ls(root, detail=False))


def test_fsspec_writer_to_memory_uploads_closed_segments(
    tmp_path: Path, memory_url: str, make_record: MakeRecord
) -> None:
    spool = tmp_path / "spool"
    writer = FsspecWriter(memory_url, spool_dir=spool, rotate_bytes=3000, upload_interval_s=60)
    records = [make_record() for _ in range(20)]
    for rec in records[:10]:
        writer.write(rec)
    deadline = time.monotonic() + 10
    while not fsspec.filesystem("memory").exists(memory_url[len("memory://") :]):
        assert time.monotonic() < deadline, "rotation did not wake the uploader"
        time.sleep(0.01)
    writer.upload_pending()  # whatever the uploader had not taken yet
    uploaded_during_writes = remote_names(memory_url)
    assert uploaded_during_writes  # rotation uploaded without waiting for flush
    assert all(NAME_RE.match(n) for n in uploaded_during_writes)
    current = [p.name for p in segments(spool)]
    writer.flush()
    assert set(current) <= set(remote_names(memory_url))  # same file names as in the spool
    for rec in records[10:]:
        writer.write(rec)
    writer.close()
    assert segments(spool) == []
    assert [r["job_id"] for r in iter_records(memory_url)] == [r["job_id"] for r in records]


def test_fsspec_writer_recovers_leftovers_but_not_live_segments(
    tmp_path: Path, make_record: MakeRecord
) -> None:
    url, spool = f"file://{tmp_path}/remote", tmp_path / "spool"
    with JsonlWriter(spool) as crashed:  # what a killed run leaves behind: a closed segment
        crashed.write(make_record(job_id="left-over"))
        leftover = crashed.current
    assert leftover is not None
    with leftover.open("ab") as f:
        f.write(b'{"job_id": "to')  # ... torn by the kill
    live = JsonlWriter(spool)  # another process still writing into the same spool
    live.write(make_record(job_id="still-live"))
    assert live.current is not None
    writer = FsspecWriter(url, spool_dir=spool)  # its background uploader takes the leftover
    deadline = time.monotonic() + 10
    while leftover.exists():
        assert time.monotonic() < deadline, "the leftover segment was not uploaded"
        time.sleep(0.01)
    assert remote_names(url) == [leftover.name]
    assert not leftover.exists() and live.current.exists()
    writer.close()
    assert [r["job_id"] for r in iter_records(url)] == ["left-over"]
    live.close()
    FsspecWriter(url, spool_dir=spool).close()
    assert sorted(r["job_id"] for r in iter_records(url)) == ["left-over", "still-live"]


def test_segments_of_a_killed_fsspec_writer_are_uploaded_by_the_next(tmp_path: Path) -> None:
    url, spool = f"file://{tmp_path}/remote", tmp_path / "spool"
    acked = run_and_kill("fsspec", url, str(spool), at_least=30)
    assert segments(spool)  # the open segment (and maybe more) never reached the remote
    FsspecWriter(url, spool_dir=spool).close()
    assert segments(spool) == []
    seqs = [r["seq"] for r in iter_records(url)]
    assert seqs == list(range(len(seqs))) and acked <= len(seqs) <= acked + 1


def test_failed_upload_keeps_the_segment_for_the_next_attempt(
    tmp_path: Path, memory_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "spool"
    with JsonlWriter(spool) as crashed:
        crashed.write({"job_id": "left-over"})

    def failing_put(self: Store, local: Path, path: str) -> None:
        raise ConnectionError("network down")

    with monkeypatch.context() as patch:
        patch.setattr(Store, "put_file", failing_put)
        # Without the background uploader, uploads happen in the writing thread.
        writer = FsspecWriter(memory_url, spool_dir=spool, rotate_bytes=10, upload_interval_s=None)
        writer.write({"job_id": "a"})  # rotation tries to upload, fails, logs; write succeeds
        assert len(segments(spool)) == 2 and remote_names(memory_url) == []
        with pytest.raises(ConnectionError):
            writer.flush()
    writer.write({"job_id": "b"})
    writer.close()
    assert segments(spool) == []
    assert [r["job_id"] for r in iter_records(memory_url)] == ["left-over", "a", "b"]


def test_upload_never_overwrites_a_segment_of_the_same_name(
    tmp_path: Path, memory_url: str
) -> None:
    spool = tmp_path / "spool"
    with JsonlWriter(spool) as local:
        local.write({"job_id": "ours"})
        name = local.current.name  # type: ignore[union-attr]
    fs, root = fsspec.core.url_to_fs(memory_url)
    fs.pipe_file(f"{root}/{name}", b'{"job_id": "another host"}\n')
    FsspecWriter(memory_url, spool_dir=spool).close()
    assert sorted(r["job_id"] for r in iter_records(memory_url)) == ["another host", "ours"]
