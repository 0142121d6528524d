"""Compaction of JSONL segments into date-partitioned Parquet, and queries over both.

JSONL is the right format to *write* (append one line, survive a kill) and the wrong one to
*read* at scale; Parquet is the reverse. :func:`compact` moves closed segments into
``<target>/parquet/date=YYYY-MM-DD/part-<uuid>.parquet`` (the date is the UTC date of
``ended_at``), and :func:`query` reads Parquet plus whatever JSONL is not compacted yet.

Which segments are compacted: every segment no live writer holds. Locally that is decided by the
segment's ``flock`` (held by its writer while open, released on close or death), so compaction
can run at any time, even beside a running executor; remote writers upload only closed
segments, so every remote segment qualifies. ``before`` further limits it to segments opened
before a UTC date (e.g. yesterday's and older, so each day ends up in few Parquet files).

Crash safety: the Parquet file is published atomically, and segments are deleted only after it.
A crash in between leaves the records in both places; :func:`query` therefore deduplicates by
``(job_id, attempt)``, keeping the first copy (copies are identical).
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ValidationError
from . import defaults
from ._jsonl import claim_segment, parse_lines, segment_date, utc_date
from ._store import Store, basename, resolve
from .records import SCHEMA, to_table

__all__ = ["compact", "query"]

log = logging.getLogger(__name__)

_CONVERSION_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


def compact(target: str | Path | None = None, *, before: date | None = None) -> list[str]:
    """Move closed JSONL segments of ``target`` into date-partitioned Parquet.

    Returns the Parquet paths written. A segment holding a record that does not fit
    :data:`~assay.telemetry.SCHEMA` (or lacks ``job_id``/``ended_at``) is left as JSONL and
    logged, never deleted: compaction must not lose what it cannot convert.
    """
    store = Store(resolve(target))
    segments = [s for s in store.segments() if before is None or _opened_before(s, before)]
    written: list[str] = []
    for batch in _batches(store, segments):
        written.extend(_compact_batch(store, batch))
    return written


def _opened_before(path: str, before: date) -> bool:
    opened = segment_date(basename(path))
    return opened is not None and opened < before


def _batches(store: Store, segments: Sequence[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for seg in segments:
        try:
            seg_size = store.size(seg)
        except FileNotFoundError:
            continue  # compacted by someone else meanwhile
        if batch and size + seg_size > defaults.COMPACT_BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(seg)
        size += seg_size
    if batch:
        yield batch


def _compact_batch(store: Store, batch: list[str]) -> list[str]:
    with ExitStack() as held:
        by_date: dict[date, list[dict[str, Any]]] = defaultdict(list)
        done: list[str] = []
        for seg in batch:
            if store.local_root is not None:
                # Local segments: skip the ones a live writer (or another compactor) holds.
                if not held.enter_context(claim_segment(Path(seg))):
                    continue
            records = list(parse_lines(store.read_lines(seg)))
            dated = _date_records(records, seg)
            if dated is None:
                continue
            for day, rec in dated:
                by_date[day].append(rec)
            done.append(seg)
        written = []
        for day in sorted(by_date):
            table = to_table(by_date[day]).sort_by("ended_at")
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression=defaults.PARQUET_COMPRESSION)
            path = store.join(
                "parquet", f"date={day.isoformat()}", f"part-{uuid.uuid4().hex}.parquet"
            )
            store.put_bytes(sink.getvalue().to_pybytes(), path)
            written.append(path)
        for seg in done:  # only now: every record of these segments is in Parquet
            store.remove(seg)
    return written


def _date_records(
    records: list[dict[str, Any]], seg: str
) -> list[tuple[date, dict[str, Any]]] | None:
    """Each record with its partition date, or ``None`` (logged) if the segment must stay."""
    try:
        to_table(records)  # validates every field against SCHEMA
        dated = []
        for rec in records:
            if not isinstance(rec.get("job_id"), str):
                raise ValueError("job_id missing or not a string")
            dated.append((utc_date(float(rec["ended_at"])), rec))
    except (*_CONVERSION_ERRORS, KeyError) as exc:
        log.warning("not compacting %s: a record does not fit the schema (%s)", seg, exc)
        return None
    return dated


def query(
    target: str | Path | None = None,
    *,
    verdict: str | None = None,
    language: str | None = None,
    problem_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
) -> pa.Table:
    """Records of ``target`` matching every given filter, newest ``ended_at`` first.

    Reads compacted Parquet (skipping date partitions outside ``since``/``until``) and the JSONL
    not compacted yet, drops duplicates by ``(job_id, attempt)``, then keeps the first ``limit``
    rows. ``since`` is inclusive and ``until`` exclusive, both on ``ended_at``; naive datetimes
    are taken as UTC. JSONL records that do not fit the schema are skipped with a warning.
    """
    if limit is not None and limit < 0:
        raise ValidationError("limit", f"must be >= 0, got {limit}")
    store = Store(resolve(target))
    lo = _epoch(since)
    hi = _epoch(until)
    where = _filter(verdict, language, problem_id, lo, hi)
    parts: list[pa.Table] = []
    for path in store.parquet_files():
        if not _partition_overlaps(path, lo, hi):
            continue
        try:
            with store.fs.open(path, "rb") as f:
                table = _conform(pq.read_table(f))
        except FileNotFoundError:
            continue
        parts.append(table if where is None else table.filter(where))
    for seg in store.segments():
        table = _tolerant_table(list(parse_lines(store.read_lines(seg))), seg)
        parts.append(table if where is None else table.filter(where))
    if not parts:
        return SCHEMA.empty_table()
    result = _dedupe(pa.concat_tables(parts))
    result = result.sort_by([("ended_at", "descending")])
    return result if limit is None else result.slice(0, limit)


def _conform(table: pa.Table) -> pa.Table:
    """``table`` with :data:`SCHEMA`'s columns in order; a column added to the schema after
    the file was written (e.g. ``source_job_id``) is null."""
    for name in SCHEMA.names:
        if name not in table.column_names:
            table = table.append_column(
                SCHEMA.field(name), pa.nulls(table.num_rows, SCHEMA.field(name).type)
            )
    return table.select(SCHEMA.names).cast(SCHEMA)


def _epoch(moment: datetime | None) -> float | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _filter(
    verdict: str | None,
    language: str | None,
    problem_id: str | None,
    lo: float | None,
    hi: float | None,
) -> pc.Expression | None:
    """One Arrow expression for all filters (rows where it is null are dropped, like SQL)."""
    terms: list[pc.Expression] = []
    for column, wanted in (
        ("verdict", verdict),
        ("language", language),
        ("problem_id", problem_id),
    ):
        if wanted is not None:
            terms.append(pc.field(column) == wanted)
    if lo is not None:
        terms.append(pc.field("ended_at") >= lo)
    if hi is not None:
        terms.append(pc.field("ended_at") < hi)
    if not terms:
        return None
    expr = terms[0]
    for term in terms[1:]:
        expr = expr & term
    return expr


def _partition_overlaps(path: str, lo: float | None, hi: float | None) -> bool:
    part = path.rsplit("/", 2)[-2]
    try:
        day = date.fromisoformat(part.removeprefix("date="))
    except ValueError:
        return True  # unknown layout: read it rather than miss records
    start = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
    end = (datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)).timestamp()
    return (lo is None or end > lo) and (hi is None or start < hi)


def _tolerant_table(records: list[dict[str, Any]], seg: str) -> pa.Table:
    try:
        return to_table(records)
    except _CONVERSION_ERRORS:
        good = []
        for rec in records:
            try:
                to_table([rec])
            except _CONVERSION_ERRORS as exc:
                log.warning("skipping a record of %s that does not fit the schema: %s", seg, exc)
                continue
            good.append(rec)
        return to_table(good)


def _dedupe(table: pa.Table) -> pa.Table:
    """Keep the first row of each ``(job_id, attempt)``, in the original order."""
    if table.num_rows == 0:
        return table
    indexed = table.select(["job_id", "attempt"]).append_column(
        "_row", pa.array(range(table.num_rows), pa.int64())
    )
    firsts = indexed.group_by(["job_id", "attempt"], use_threads=False).aggregate([("_row", "min")])
    keep = pc.sort_indices(firsts["_row_min"])
    return table.take(pc.take(firsts["_row_min"], keep))
