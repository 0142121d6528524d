"""Append-only JSONL segments: the crash-safe first home of every record.

Why this shape:

* One record is one line written by a single ``write(2)`` on an ``O_APPEND`` descriptor. The
  kernel's page cache survives the death of the process, so ``SIGKILL`` loses at most the record
  being written, and readers skip a torn last line.
* Each segment is held under an exclusive ``flock`` while its writer has it open. The lock dies
  with the process (even on ``SIGKILL``), so "unlocked" means "closed or abandoned": compaction and
  uploads take only segments they can lock, and never one a live writer is still appending to.
* File names carry the UTC start time, the pid and a sequence number, so segments from many
  processes share a directory without coordination and sort roughly by time.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, date, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from ..errors import ClosedError, ValidationError
from . import defaults

__all__ = [
    "JsonlWriter",
    "claim_segment",
    "encode_record",
    "fresh_segment_name",
    "is_segment_name",
    "parse_lines",
    "segment_date",
    "segment_name",
    "utc_date",
]

_SEGMENT_RE = re.compile(r"^records-(\d{8})-(\d{6})-(\d+)-(\d+)\.jsonl$")
# Process-wide, so two writers on one directory in the same second get distinct names. It starts
# at a random number because pids repeat across hosts (containers start at 1): segments from many
# machines uploaded to one bucket must not overwrite each other.
_SEQ = itertools.count(secrets.randbelow(10**9))
# Live writers, so a forked child can replace locks another thread may have held at fork time.
_WRITERS: weakref.WeakSet[JsonlWriter] = weakref.WeakSet()


def segment_name(now: float, pid: int, seq: int) -> str:
    """``records-YYYYMMDD-HHMMSS-<pid>-<seq>.jsonl`` for a segment opened at ``now`` (UTC).

    ``seq`` is zero-padded to 10 digits so names sort in creation order within a second.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"records-{stamp}-{pid}-{seq:010d}.jsonl"


def fresh_segment_name(name: str) -> str:
    """The same segment name (time, pid) with a new sequence number, to step around a clash."""
    m = _SEGMENT_RE.match(name)
    if m is None:
        raise ValueError(f"not a segment name: {name!r}")
    return f"records-{m.group(1)}-{m.group(2)}-{m.group(3)}-{next(_SEQ):010d}.jsonl"


def is_segment_name(name: str) -> bool:
    """Whether a file name is one of ours (temporary and foreign files are left alone)."""
    return _SEGMENT_RE.match(name) is not None


def segment_date(name: str) -> date | None:
    """UTC date a segment was opened on, from its name; ``None`` for foreign names."""
    m = _SEGMENT_RE.match(name)
    if m is None:
        return None
    try:
        return datetime.strptime(m.group(1), "%Y%m%d").date()
    except ValueError:
        return None


def _json_default(value: object) -> object:
    # Enums (Verdict, Status) are recorded by value; anything else unknown by its text, so a
    # record is never lost to an exotic field.
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    return str(value)


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One record as one UTF-8 JSON line ending in ``\\n``.

    ``json.dumps`` escapes newlines inside strings, so the line is whole. Lone surrogates (from
    undecodable program output) become ``?`` because Parquet strings must be valid UTF-8.
    """
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    return (text + "\n").encode("utf-8", "replace")


def parse_lines(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Records from raw JSONL lines, skipping torn, malformed and non-object lines.

    A torn line (the record a killed writer was writing) never parses: every strict prefix of a
    JSON object lacks its closing brace. A line missing only its ``\\n`` is a whole record and
    is kept.
    """
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _write_all(fd: int, data: bytes) -> None:
    # A regular-file write is short only on ENOSPC-like conditions or for >2 GiB; finishing the
    # rest keeps the line whole in every other case.
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@contextmanager
def claim_segment(path: Path) -> Iterator[bool]:
    """Lock a closed segment for exclusive processing (upload or compaction).

    Yields ``True`` while the lock is held and the file is still linked and non-empty; ``False``
    when a live writer holds it, another process already took it, or it is empty. An empty,
    unlocked segment older than the grace period is an abandoned one and is removed here.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        st = os.fstat(fd)
        if st.st_nlink == 0:
            yield False
            return
        if st.st_size == 0:
            if time.time() - st.st_mtime > defaults.EMPTY_SEGMENT_GRACE_S:
                path.unlink(missing_ok=True)
            yield False
            return
        yield True
    finally:
        os.close(fd)


class JsonlWriter:
    """Append records to rotating JSONL segments in ``directory`` (created if missing).

    Thread-safe. A segment is created on the first write after a rotation, so an idle writer
    leaves no empty files. It rotates once a segment passes ``rotate_bytes`` and when the UTC
    date changes, so each segment belongs to one day. ``fsync=True`` also survives a machine
    crash, at the cost of one disk flush per record. ``on_rotate`` is called (outside the lock)
    with each segment closed by rotation; remote writers use it to upload. ``clock`` exists so
    tests can cross midnight without waiting for it.
    """

    def __init__(
        self,
        directory: str | Path,
        rotate_bytes: int = defaults.ROTATE_BYTES,
        fsync: bool = False,
        *,
        on_rotate: Callable[[Path], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if rotate_bytes <= 0:
            raise ValidationError("rotate_bytes", f"must be positive, got {rotate_bytes}")
        self.directory = Path(directory).expanduser()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.rotate_bytes = rotate_bytes
        self.fsync = fsync
        self._on_rotate = on_rotate
        self._clock = clock
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._path: Path | None = None
        self._size = 0
        self._day: tuple[int, int, int] | None = None
        self._pid = os.getpid()
        self._closed = False
        _WRITERS.add(self)

    @property
    def current(self) -> Path | None:
        """The segment being appended to, if one is open."""
        return self._path

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as one line; rotate first or after as the limits require."""
        line = encode_record(record)
        closed: list[Path] = []
        with self._lock:
            if self._closed:
                raise ClosedError(f"write to a closed JsonlWriter ({self.directory})")
            if self._pid != os.getpid():
                self._forget_inherited()
            now = self._clock()
            if self._fd is not None and _utc_day(now) != self._day:
                closed.append(self._close_segment())
            fd = self._fd if self._fd is not None else self._open_segment(now)
            try:
                _write_all(fd, line)
                if self.fsync:
                    os.fdatasync(fd)
            except OSError:
                # A partial line may now end this segment; closing it keeps the torn line at the
                # end of a file, where readers skip it, instead of gluing it to the next record.
                self._close_segment()
                raise
            self._size += len(line)
            if self._size >= self.rotate_bytes:
                closed.append(self._close_segment())
        if self._on_rotate is not None:
            for path in closed:
                self._on_rotate(path)

    def rotate(self) -> Path | None:
        """Close the current segment now (the next write starts a new one); return its path."""
        with self._lock:
            if self._fd is None or self._pid != os.getpid():
                return None
            return self._close_segment()

    def flush(self) -> None:
        """Make written records durable on disk (they are already visible to readers)."""
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                os.fsync(self._fd)

    def close(self) -> None:
        """Close the current segment; further writes raise. Safe to call twice."""
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                self._close_segment()
            self._closed = True

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_segment(self, now: float) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
        while True:
            path = self.directory / segment_name(now, self._pid, next(_SEQ))
            try:
                fd = os.open(path, flags, 0o644)
                break
            except FileExistsError:  # a recycled pid in the same second; take the next number
                continue
        # Blocking: only a claimer that found the file empty can hold it, and it lets go at once.
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._fd, self._path, self._size, self._day = fd, path, 0, _utc_day(now)
        return fd

    def _close_segment(self) -> Path:
        assert self._fd is not None and self._path is not None
        fd, path = self._fd, self._path
        self._fd, self._path, self._size, self._day = None, None, 0, None
        try:
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)  # releases the flock: the segment is now closed for everyone
        return path

    def _forget_inherited(self) -> None:
        # After fork the child shares the parent's descriptor and lock; it must not append to or
        # close the parent's segment, so it drops its copy and starts its own file.
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._path, self._size, self._day = None, None, 0, None
        self._pid = os.getpid()


def _reinit_after_fork() -> None:
    for writer in list(_WRITERS):
        writer._lock = threading.Lock()


os.register_at_fork(after_in_child=_reinit_after_fork)


def _utc_day(ts: float) -> tuple[int, int, int]:
    t = time.gmtime(ts)
    return (t.tm_year, t.tm_mon, t.tm_mday)


def utc_date(ts: float) -> date:
    """The UTC calendar date of a unix timestamp (records are partitioned by it)."""
    return datetime.fromtimestamp(ts, UTC).date()
