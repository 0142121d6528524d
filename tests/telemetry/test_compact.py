"""Compaction of JSONL into date-partitioned Parquet, and queries over Parquet plus JSONL."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.parquet as pq
import pytest
from _telemetry import NOON, MakeRecord

from assay.telemetry import (
    SCHEMA,
    FsspecWriter,
    JsonlWriter,
    compact,
    iter_records,
    query,
)

DAY = 86400.0
PART_RE = re.compile(r"/parquet/date=(\d{4}-\d{2}-\d{2})/part-[0-9a-f]{32}\.parquet$")


def jsonl(directory: Path) -> list[Path]:
    return sorted(directory.glob("records-*.jsonl"))


def write(directory: Path | str, records: list[dict[str, Any]], **kw: Any) -> None:
    with JsonlWriter(directory, **kw) as writer:
        for rec in records:
            writer.write(rec)


@pytest.fixture
def three_days(make_record: MakeRecord) -> list[dict[str, Any]]:
    """Nine records over 2024-05-01..03, mixed verdicts, languages and problems."""
    out = []
    for day in range(3):
        for i, (verdict, language) in enumerate(
            [("accepted", "python"), ("wrong_answer", "cpp"), ("time_limit", "python")]
        ):
            out.append(
                make_record(
                    ended_at=NOON + day * DAY + i * 60,
                    verdict=verdict,
                    reward=1.0 if verdict == "accepted" else 0.0,
                    language=language,
                    problem_id=f"p{i}",
                )
            )
    return out


def by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["job_id"]: r for r in rows}


def test_compaction_partitions_by_utc_date_and_removes_jsonl(
    tmp_path: Path, three_days: list[dict[str, Any]]
) -> None:
    write(tmp_path, three_days, rotate_bytes=4000)
    assert len(jsonl(tmp_path)) > 1
    written = compact(tmp_path)
    assert jsonl(tmp_path) == []
    dates = sorted(PART_RE.search(p).group(1) for p in written)  # type: ignore[union-attr]
    assert dates == ["2024-05-01", "2024-05-02", "2024-05-03"]
    for path in written:
        table = pq.read_table(path)
        assert table.schema.equals(SCHEMA, check_metadata=False)
        day = PART_RE.search(path).group(1)  # type: ignore[union-attr]
        ended = table["ended_at"].to_pylist()
        assert len(ended) == 3
        assert {datetime.fromtimestamp(t, UTC).date().isoformat() for t in ended} == {day}
    # Nothing lost, nothing changed: every field (nested ones too) reads back as written.
    assert by_id(query(tmp_path).to_pylist()) == by_id(three_days)


def test_query_filters_over_parquet_and_jsonl_without_duplicates(
    tmp_path: Path, three_days: list[dict[str, Any]], make_record: MakeRecord
) -> None:
    write(tmp_path, three_days[:6])
    compact(tmp_path)
    write(tmp_path, three_days[6:])  # day 3 is still JSONL
    assert len(jsonl(tmp_path)) == 1

    def ids(**filters: Any) -> list[str]:
        return query(tmp_path, **filters)["job_id"].to_pylist()

    newest_first = [r["job_id"] for r in sorted(three_days, key=lambda r: -r["ended_at"])]
    assert ids() == newest_first
    assert ids(limit=2) == newest_first[:2]
    accepted = [r["job_id"] for r in three_days if r["verdict"] == "accepted"][::-1]
    assert ids(verdict="accepted") == accepted
    assert (
        ids(language="cpp", problem_id="p1")
        == [r["job_id"] for r in three_days if r["language"] == "cpp"][::-1]
    )
    assert ids(problem_id="p0", language="cpp") == []
    day2 = datetime(2024, 5, 2, tzinfo=UTC)
    assert (
        ids(since=day2, until=day2 + timedelta(days=1))
        == [r["job_id"] for r in three_days[3:6]][::-1]
    )
    # Naive datetimes are UTC; since is inclusive, until exclusive.
    exact = datetime.fromtimestamp(three_days[4]["ended_at"], UTC).replace(tzinfo=None)
    assert ids(since=exact, until=exact + timedelta(seconds=60)) == [three_days[4]["job_id"]]
    assert ids(since=datetime(2024, 5, 3, 12, 1, tzinfo=UTC), verdict="wrong_answer") == [
        three_days[7]["job_id"]
    ]


def test_crash_between_parquet_and_delete_gives_no_duplicate_rows(
    tmp_path: Path, three_days: list[dict[str, Any]], make_record: MakeRecord
) -> None:
    write(tmp_path, three_days)
    saved = tmp_path / "saved"
    saved.mkdir()
    for seg in jsonl(tmp_path):
        shutil.copy(seg, saved / seg.name)
    compact(tmp_path)
    for seg in saved.iterdir():  # as if compaction died before deleting the segments
        shutil.copy(seg, tmp_path / seg.name)
    retry = make_record(job_id=three_days[0]["job_id"], attempt=1, ended_at=NOON + 5)
    write(tmp_path, [retry])  # a retried attempt of the same job is a different record
    assert len(list(iter_records(tmp_path))) == len(three_days) + 1
    rows = query(tmp_path).to_pylist()
    keys = [(r["job_id"], r["attempt"]) for r in rows]
    assert len(keys) == len(set(keys)) == len(three_days) + 1
    compact(tmp_path)  # compacting the duplicates again is still read back once
    assert len(query(tmp_path)) == len(three_days) + 1


def test_segments_a_live_writer_holds_are_not_compacted(
    tmp_path: Path, make_record: MakeRecord
) -> None:
    write(tmp_path, [make_record(job_id="closed")])
    live = JsonlWriter(tmp_path)
    live.write(make_record(job_id="live"))
    written = compact(tmp_path)
    assert len(written) == 1
    assert jsonl(tmp_path) == [live.current]
    live.write(make_record(job_id="live-2"))  # the writer keeps appending to its segment
    assert sorted(query(tmp_path)["job_id"].to_pylist()) == ["closed", "live", "live-2"]
    live.close()
    assert len(compact(tmp_path)) == 1
    assert jsonl(tmp_path) == []
    assert sorted(query(tmp_path)["job_id"].to_pylist()) == ["closed", "live", "live-2"]


def test_before_limits_compaction_to_older_segments(
    tmp_path: Path, make_record: MakeRecord
) -> None:
    write(tmp_path, [make_record(job_id="old")], clock=lambda: NOON)
    write(
        tmp_path, [make_record(job_id="new", ended_at=NOON + 3 * DAY)], clock=lambda: NOON + 3 * DAY
    )
    written = compact(tmp_path, before=date(2024, 5, 2))
    assert [PART_RE.search(p).group(1) for p in written] == ["2024-05-01"]  # type: ignore[union-attr]
    assert [r["job_id"] for r in iter_records(tmp_path)] == ["new"]
    assert compact(tmp_path, before=date(2024, 5, 2)) == []


def test_a_segment_with_a_record_that_does_not_fit_is_kept(
    tmp_path: Path, make_record: MakeRecord
) -> None:
    write(tmp_path, [make_record(job_id="good-1")])
    write(tmp_path, [make_record(job_id="good-2"), make_record(job_id="bad", passed="many")])
    written = compact(tmp_path)
    assert len(written) == 1
    (kept,) = jsonl(tmp_path)
    assert [r["job_id"] for r in iter_records(kept)] == ["good-2", "bad"]
    assert sorted(query(tmp_path)["job_id"].to_pylist()) == ["good-1", "good-2"]


def test_compact_and_query_on_a_remote_url(
    tmp_path: Path, memory_url: str, three_days: list[dict[str, Any]]
) -> None:
    with FsspecWriter(memory_url, spool_dir=tmp_path / "spool", rotate_bytes=5000) as writer:
        for rec in three_days:
            writer.write(rec)
    written = compact(memory_url)
    assert len(written) == 3 and all(PART_RE.search(p) for p in written)
    fs, root = fsspec.core.url_to_fs(memory_url)
    assert [p for p in fs.ls(root, detail=False) if p.endswith(".jsonl")] == []
    assert list(iter_records(memory_url)) == []
    table = query(memory_url, verdict="time_limit", language="python")
    assert (
        table["job_id"].to_pylist()
        == [r["job_id"] for r in three_days if r["verdict"] == "time_limit"][::-1]
    )
    assert by_id(query(memory_url).to_pylist()) == by_id(three_days)


def test_query_of_an_empty_or_missing_target_is_an_empty_table(tmp_path: Path) -> None:
    for target in (tmp_path, tmp_path / "missing"):
        table = query(target)
        assert table.num_rows == 0 and table.schema.equals(SCHEMA, check_metadata=False)
    assert compact(tmp_path) == []
    with pytest.raises(ValueError, match="limit"):
        query(tmp_path, limit=-1)
