"""The newest execution records, kept in memory for drill-down (the dashboard's tables).

The records themselves go to their writer (local JSONL or an object store) unchanged;
:class:`TeeWriter` also hands each one to :class:`RecentRecords`, which keeps a bounded ring of
the few fields a per-caller or per-batch view needs (never the code or the outputs), so the
dashboard can answer "which trainer, which batch" without reading the store.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .records import RecordWriter

__all__ = ["RecentRecords", "RecentRow", "TeeWriter"]

#: Rows kept: at a few hundred jobs per second, the last minute or so of a busy service and
#: hours of a quiet one; about 200 bytes each.
DEFAULT_KEEP = 20_000


@dataclass(frozen=True, slots=True)
class RecentRow:
    """The fields of one record the drill-down shows."""

    job_id: str
    batch_id: str
    caller: str
    language: str
    problem_id: str | None
    outcome: str
    verdict: str | None
    reward: float | None
    wall_s: float
    queue_wait_s: float
    ended_at: float
    cache_hit: bool

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> RecentRow:
        return cls(
            job_id=str(record.get("job_id", "")),
            batch_id=str(record.get("batch_id", "")),
            caller=str(record.get("caller", "")),
            language=str(record.get("language", "")),
            problem_id=record.get("problem_id"),
            outcome=str(record.get("outcome", "")),
            verdict=record.get("verdict"),
            reward=record.get("reward"),
            wall_s=float(record.get("wall_s") or 0.0),
            queue_wait_s=float(record.get("queue_wait_s") or 0.0),
            ended_at=float(record.get("ended_at") or 0.0),
            cache_hit=bool(record.get("cache_hit", False)),
        )

    @property
    def label(self) -> str:
        """The verdict, or ``(deadline)``/``(cancelled)`` for jobs that never ran."""
        return self.verdict or f"({self.outcome})"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(rows: list[RecentRow]) -> dict[str, Any]:
    verdicts = collections.Counter(r.label for r in rows)
    ran = [r.wall_s for r in rows if r.outcome == "done" and not r.cache_hit]
    waits = [r.queue_wait_s for r in rows]
    return {
        "jobs": len(rows),
        "verdicts": dict(verdicts.most_common()),
        "accepted_share": verdicts.get("accepted", 0) / len(rows) if rows else 0.0,
        "sandbox_errors": verdicts.get("sandbox_error", 0),
        "wall_p50_s": _percentile(ran, 0.5),
        "wall_p95_s": _percentile(ran, 0.95),
        "queue_wait_p95_s": _percentile(waits, 0.95),
        "first_ended_at": min((r.ended_at for r in rows), default=0.0),
        "last_ended_at": max((r.ended_at for r in rows), default=0.0),
    }


class RecentRecords:
    """A thread-safe ring of :class:`RecentRow` with per-caller and per-batch summaries."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        if keep < 1:
            raise ValueError(f"keep: must be at least 1, got {keep}")
        self._rows: collections.deque[RecentRow] = collections.deque(maxlen=keep)
        self._lock = threading.Lock()

    def add(self, record: Mapping[str, Any]) -> None:
        row = RecentRow.of(record)
        with self._lock:
            self._rows.append(row)

    def rows(self) -> list[RecentRow]:
        with self._lock:
            return list(self._rows)

    def callers(self) -> list[dict[str, Any]]:
        """One summary per caller, busiest first."""
        groups: dict[str, list[RecentRow]] = collections.defaultdict(list)
        for row in self.rows():
            groups[row.caller].append(row)
        out = [{"caller": caller, **_summary(rows)} for caller, rows in groups.items()]
        return sorted(out, key=lambda s: (-s["jobs"], s["caller"]))

    def batches(self, caller: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """One summary per batch (of ``caller`` if given), the most recently active first."""
        groups: dict[str, list[RecentRow]] = collections.defaultdict(list)
        for row in self.rows():
            if caller is None or row.caller == caller:
                groups[row.batch_id].append(row)
        out = [
            {"batch_id": batch, "caller": rows[0].caller, **_summary(rows)}
            for batch, rows in groups.items()
        ]
        out.sort(key=lambda s: -s["last_ended_at"])
        return out[:limit]

    def batch(self, batch_id: str) -> list[dict[str, Any]]:
        """Every kept row of one batch, in the order they ended."""
        return [asdict(r) | {"label": r.label} for r in self.rows() if r.batch_id == batch_id]


class TeeWriter:
    """A :class:`RecordWriter` that writes to ``inner`` and also feeds :class:`RecentRecords`.

    ``inner`` stays the record of truth: a failure there propagates as before, and the ring
    only ever sees records the inner writer accepted.
    """

    def __init__(self, inner: RecordWriter, recent: RecentRecords) -> None:
        self.inner = inner
        self.recent = recent

    def write(self, record: Mapping[str, Any]) -> None:
        self.inner.write(record)
        self.recent.add(record)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()
