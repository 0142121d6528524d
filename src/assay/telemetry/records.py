"""Execution records: one plain dict per job attempt, appended as JSONL, compacted to Parquet.

Principle 6 says every run is recorded. A record is a plain ``dict`` (documented by
:class:`Record`) so the executor, the trainer and ad-hoc scripts can all produce and consume it
without importing Assay; :data:`SCHEMA` pins its column types for Parquet. Writers are pluggable
behind :class:`RecordWriter`: :class:`JsonlWriter` (local, crash-safe), :class:`FsspecWriter`
(any fsspec URL through a local spool), :class:`MemoryWriter` (tests) and :class:`NullWriter`
(``off``). :func:`open_writer` picks one from a target string.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import (
    Any,
    Protocol,
    get_args,
    get_origin,
    get_type_hints,
    runtime_checkable,
)

import pyarrow as pa
from typing_extensions import TypedDict, is_typeddict  # (pydantic models embed them)

from ..errors import ClosedError
from . import defaults
from ._jsonl import JsonlWriter, parse_lines
from ._remote import FsspecWriter
from ._store import Store, resolve

__all__ = [
    "RECORD_VERSION",
    "SCHEMA",
    "FsspecWriter",
    "JsonlWriter",
    "MemoryWriter",
    "NullWriter",
    "Record",
    "RecordLimits",
    "RecordTest",
    "RecordWriter",
    "iter_records",
    "open_writer",
    "to_table",
]

#: Bumped when a field changes meaning or type; readers can then convert old records.
RECORD_VERSION = 1


class RecordLimits(TypedDict):
    """The :class:`~assay.Limits` the job ran under."""

    time_s: float
    wall_s: float | None
    memory_mb: int
    processes: int
    output_bytes: int
    file_bytes: int
    disk_mb: int


class RecordTest(TypedDict):
    """One test's outcome (its expected output is in the problem, not repeated here)."""

    index: int
    verdict: str
    cpu_s: float
    wall_s: float
    peak_memory_bytes: int
    message: str


class Record(TypedDict):
    """One execution record, exactly as the executor writes it.

    ``outcome`` says whether the job ran (``done``) or why not (``deadline``, ``cancelled``,
    ``error``); ``verdict`` and ``reward`` are ``None`` unless it ran. Times are unix epoch
    seconds (``*_at``) or durations in seconds (``*_s``); sizes are bytes unless the name says
    otherwise. ``code``, ``stdout`` and ``stderr`` are capped; the ``*_truncated`` flags say so.
    """

    record_version: int
    job_id: str
    batch_id: str
    caller: str
    kind: str
    problem_id: str | None
    language: str
    toolchain: str
    code_sha256: str
    code: str
    code_truncated: bool
    limits: RecordLimits
    priority: int
    deadline_at: float | None
    outcome: str
    verdict: str | None
    reward: float | None
    reason: str
    tests: list[RecordTest]
    passed: int
    total: int
    cpu_s: float
    wall_s: float
    peak_memory_bytes: int
    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    submitted_at: float
    started_at: float | None
    ended_at: float
    queue_wait_s: float
    attempt: int
    cache_hit: bool
    worker: str
    host: str
    #: The job whose run produced the result: ``job_id`` itself, or for a cache hit the
    #: earlier job it was answered from (null in records written before this field).
    source_job_id: str | None
    #: Agent sessions (``kind`` ``session_step``, ``session_cell``, ``session_verify``;
    #: null for other jobs): the session, its episode (``batch_id`` too), the step's number
    #: in the session, and a verification's step reward (``reward``: its outcome reward).
    session_id: str | None
    episode_id: str | None
    step: int | None
    step_reward: float | None


#: The Arrow type of each Python type a record's fields use (``X | None``: a nullable X).
_ARROW: dict[Any, pa.DataType] = {
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
    bool: pa.bool_(),
}


def _arrow_type(hint: Any) -> pa.DataType:
    """The Arrow type of a record field's type: a scalar, ``X | None``, a list, or a nested
    TypedDict (a struct, field for field)."""
    if hint in _ARROW:
        return _ARROW[hint]
    if is_typeddict(hint):
        return pa.struct(_arrow_fields(hint))
    if get_origin(hint) is list:
        (item,) = get_args(hint)
        return pa.list_(_arrow_type(item))
    present = [h for h in get_args(hint) if h is not type(None)]
    if get_origin(hint) is types.UnionType and len(present) == 1:
        return _arrow_type(present[0])
    raise TypeError(f"no Arrow type for record field type {hint!r}")


def _arrow_fields(typed: Any) -> list[pa.Field[Any]]:
    return [pa.field(name, _arrow_type(hint)) for name, hint in get_type_hints(typed).items()]


#: Arrow/Parquet schema of :class:`Record`, field for field (derived from it, so the two
#: cannot disagree). Times stay float epoch seconds (not timestamps) so a record read back
#: from Parquet equals the one written.
SCHEMA = pa.schema(_arrow_fields(Record), metadata={"assay.record_version": str(RECORD_VERSION)})


def to_table(records: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Records as an Arrow table with :data:`SCHEMA` (unknown keys dropped, missing ones null).

    Raises ``pyarrow.ArrowInvalid``/``ArrowTypeError``/``TypeError`` if a field has the wrong type.
    """
    return pa.Table.from_pylist(list(records), schema=SCHEMA)


@runtime_checkable
class RecordWriter(Protocol):
    """Where the executor sends records. ``write`` must be safe to call from many threads."""

    def write(self, record: Mapping[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class MemoryWriter:
    """Keeps records in a list: the writer for tests and for callers that inspect in-process."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.closed = False

    def write(self, record: Mapping[str, Any]) -> None:
        with self._lock:
            if self.closed:
                raise ClosedError("write to a closed MemoryWriter")
            self.records.append(dict(record))

    def flush(self) -> None:
        """Nothing to flush: records are in :attr:`records` as soon as written."""

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> MemoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NullWriter:
    """Drops every record: what the target ``off`` gives, so callers never test for ``None``."""

    def write(self, record: Mapping[str, Any]) -> None:
        """Discard the record."""

    def flush(self) -> None:
        """Nothing is kept, so nothing to flush."""

    def close(self) -> None:
        """Nothing is held, so nothing to release."""

    def __enter__(self) -> NullWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_writer(
    target: str | Path | None = None,
    *,
    rotate_bytes: int = defaults.ROTATE_BYTES,
    fsync: bool = False,
) -> RecordWriter:
    """The writer for a target: ``None`` (``$ASSAY_RECORDS`` or ``~/.local/share/assay/records``),
    a local path or ``file://`` URL (:class:`JsonlWriter`), another ``scheme://`` URL
    (:class:`FsspecWriter`), or ``"off"`` (:class:`NullWriter`).
    """
    loc = resolve(target)
    if loc.kind == "off":
        return NullWriter()
    if loc.kind == "local":
        assert loc.path is not None
        return JsonlWriter(loc.path, rotate_bytes, fsync)
    return FsspecWriter(loc.url, rotate_bytes=rotate_bytes, fsync=fsync)


def iter_records(target: str | Path | None = None) -> Iterator[dict[str, Any]]:
    """Every record in the JSONL segments of a target, segment by segment in name order.

    Torn lines (a writer killed mid-record), malformed lines and non-object lines are skipped.
    Compacted records live in Parquet: use :func:`assay.telemetry.query` to read both. A local
    path naming a single ``.jsonl`` file reads just that file. ``off`` yields nothing.
    """
    loc = resolve(target)
    if loc.kind == "off":
        return
    store = Store(loc)
    if loc.path is not None and loc.path.is_file():
        paths = [store.root]
    else:
        paths = store.segments()
    for path in paths:
        yield from parse_lines(store.read_lines(path))
