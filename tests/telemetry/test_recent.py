"""The dashboard's drill-down rows: the tee keeps the record of truth, the ring summarises."""

from __future__ import annotations

import pytest
from _telemetry import MakeRecord

from assay.telemetry import MemoryWriter
from assay.telemetry.recent import RecentRecords, TeeWriter


def test_tee_writes_through_and_summarises_per_caller_and_batch(make_record: MakeRecord) -> None:
    inner, recent = MemoryWriter(), RecentRecords()
    tee = TeeWriter(inner, recent)
    rows = [
        ("a", "b1", "accepted", 0.1),
        ("a", "b1", "wrong_answer", 0.2),
        ("a", "b2", "accepted", 0.3),
        ("b", "b3", "sandbox_error", 0.4),
    ]
    for i, (caller, batch, verdict, wall) in enumerate(rows):
        tee.write(
            make_record(caller=caller, batch_id=batch, verdict=verdict, wall_s=wall, ended_at=i)
        )
    tee.write(make_record(caller="b", batch_id="b3", verdict=None, outcome="deadline", ended_at=9))
    assert len(inner.records) == 5  # the inner writer got every record untouched
    callers = {c["caller"]: c for c in recent.callers()}
    assert callers["a"]["jobs"] == 3 and callers["a"]["accepted_share"] == pytest.approx(2 / 3)
    assert callers["b"]["verdicts"] == {"sandbox_error": 1, "(deadline)": 1}
    assert callers["b"]["sandbox_errors"] == 1
    assert [b["batch_id"] for b in recent.batches()] == ["b3", "b2", "b1"]  # newest first
    assert [b["batch_id"] for b in recent.batches(caller="a")] == ["b2", "b1"]
    assert [j["label"] for j in recent.batch("b1")] == ["accepted", "wrong_answer"]
    tee.close()
    assert inner.closed


def test_the_ring_keeps_only_the_newest(make_record: MakeRecord) -> None:
    recent = RecentRecords(keep=3)
    for i in range(5):
        recent.add(make_record(job_id=f"j{i}"))
    assert [r.job_id for r in recent.rows()] == ["j2", "j3", "j4"]
    with pytest.raises(ValueError, match="keep"):
        RecentRecords(keep=0)
