"""``assay records show|compact|stats`` through Typer's test runner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _telemetry import NOON, MakeRecord
from typer.testing import CliRunner

from assay.telemetry import JsonlWriter, iter_records
from assay.telemetry.cli import records_app

ENV = {"COLUMNS": "240", "NO_COLOR": "1", "TERM": "dumb"}


def invoke(*args: str) -> Any:
    return CliRunner().invoke(records_app, list(args), env=ENV)


@pytest.fixture
def records_dir(tmp_path: Path, make_record: MakeRecord) -> Path:
    """Six records: four python (3 accepted, 1 wrong answer), one cpp TLE, one deadline."""
    specs = [
        ("python", "accepted", "p1", 0.10, 0.5),
        ("python", "accepted", "p1", 0.20, 1.0),
        ("python", "accepted", "p2", 0.30, 1.5),
        ("python", "wrong_answer", "p2", 0.40, 2.0),
        ("cpp", "time_limit", "p3", 2.00, 2.5),
    ]
    with JsonlWriter(tmp_path) as writer:
        for i, (language, verdict, problem, wall, wait) in enumerate(specs):
            writer.write(
                make_record(
                    job_id=f"job-{i}",
                    ended_at=NOON + i * 3600,
                    language=language,
                    verdict=verdict,
                    problem_id=problem,
                    wall_s=wall,
                    queue_wait_s=wait,
                    peak_memory_bytes=(i + 1) * 2**20,
                )
            )
        writer.write(
            make_record(
                job_id="job-5",
                ended_at=NOON + 5 * 3600,
                outcome="deadline",
                verdict=None,
                reward=None,
                queue_wait_s=30.0,
                wall_s=0.0,
            )
        )
    return tmp_path


def test_show_prints_a_filtered_table(records_dir: Path) -> None:
    result = invoke("show", str(records_dir), "--verdict", "accepted", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert "job-2" in result.output and "job-1" in result.output
    assert "job-0" not in result.output  # beyond --limit (newest first)
    assert "job-3" not in result.output  # wrong_answer
    assert "2024-05-01 14:00:00" in result.output  # ended_at of job-2, in UTC
    assert "3.0" in result.output  # job-2 peak memory in MiB


def test_show_marks_jobs_that_never_ran_by_outcome(records_dir: Path) -> None:
    result = invoke("show", str(records_dir), "--since", "2024-05-01T16:30")
    assert result.exit_code == 0, result.output
    assert "job-5" in result.output and "(deadline)" in result.output
    assert "job-4" not in result.output


def test_show_json_prints_every_field_newest_first(records_dir: Path) -> None:
    result = invoke("show", str(records_dir), "--language", "python", "--problem", "p2", "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["job_id"] for r in rows] == ["job-3", "job-2"]
    original = {r["job_id"]: r for r in iter_records(records_dir)}
    assert rows[0] == original["job-3"]


def test_compact_prints_what_it_wrote(records_dir: Path) -> None:
    result = invoke("compact", str(records_dir))
    assert result.exit_code == 0, result.output
    assert "wrote 1 Parquet file(s)" in result.output
    (part,) = records_dir.glob("parquet/date=2024-05-01/part-*.parquet")
    assert str(part) in result.output.replace("\n", "")
    assert list(records_dir.glob("records-*.jsonl")) == []
    shown = invoke("show", str(records_dir), "--json")
    assert len(shown.output.splitlines()) == 6


def test_compact_before_a_date(records_dir: Path) -> None:
    result = invoke("compact", str(records_dir), "--before", "2000-01-01")
    assert result.exit_code == 0, result.output
    assert "wrote 0 Parquet file(s)" in result.output
    assert len(list(records_dir.glob("records-*.jsonl"))) == 1


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("│").split("│")]


def test_stats_counts_and_timings(records_dir: Path) -> None:
    result = invoke("stats", str(records_dir))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "by verdict" in out and "by language" in out
    assert out.index("accepted") < out.index("wrong_answer")  # most frequent first
    rows = {cells(line)[0]: cells(line)[1:] for line in out.splitlines() if line.count("│") >= 3}
    assert rows["accepted"] == ["3", "50.0%"]
    assert rows["(deadline)"] == ["1", "16.7%"]
    assert rows["python"] == ["5", "83.3%"]
    assert rows["cpp"] == ["1", "16.7%"]
    # Queue wait over all six (0.5, 1, 1.5, 2, 2.5, 30); run time only over the five that ran.
    assert rows["queue wait"] == ["6", "6.2500", "1.7500", "23.1250"]
    assert rows["run (wall)"] == ["5", "0.6000", "0.3000", "1.6800"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["show", "--since", "last tuesday"], "--since"),
        (["show", "--until", "2024-13-01"], "--until"),
        (["stats", "--since", "soon"], "--since"),
        (["compact", "--before", "2024-05"], "--before"),
    ],
)
def test_bad_dates_are_usage_errors_naming_the_option(
    records_dir: Path, args: list[str], option: str
) -> None:
    result = invoke(args[0], str(records_dir), *args[1:])
    assert result.exit_code == 2
    assert f"Invalid value for '{option}'" in result.output


def test_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("show", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "TARGET" in result.output and "no records directory" in result.output
    assert invoke("stats", "off").exit_code == 2


def test_target_defaults_to_the_environment(
    records_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_RECORDS", str(records_dir))
    result = invoke("show", "--json", "--limit", "1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["job_id"] == "job-5"


@pytest.mark.parametrize("command", ["show", "compact", "stats"])
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert f"Example: assay records {command}" in result.output


def test_show_reads_at_80_columns(tmp_path: Path, make_record: MakeRecord) -> None:
    # Issue 14: at 80 columns every field of a record is shown whole (no "runtim…").
    with JsonlWriter(tmp_path) as writer:
        writer.write(
            make_record(
                job_id="8a870fed0000000f",
                ended_at=NOON,
                language="javascript",
                verdict="runtime_error",
                problem_id="HumanEval/163",
            )
        )
    result = CliRunner().invoke(records_app, ["show", str(tmp_path)], env={**ENV, "COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
    for whole in ("8a870fed0000000f", "javascript", "runtime_error", "HumanEval/163", "queue s"):
        assert whole in result.output
