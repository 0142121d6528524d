"""``assay tests generate|report`` and ``assay eval --format assay`` on the written suite."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from assay.cli import app

PROMPT = 'def add(a: int, b: int) -> int:\n    """\n    >>> add(1, 2)\n    3\n    """\n'


def test_generate_report_and_eval(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps(
            {
                "task_id": "a/0",
                "prompt": PROMPT,
                "entry_point": "add",
                "reference": PROMPT + "    return a + b\n",
            }
        )
        + "\n"
    )
    suite = tmp_path / "suite.jsonl"
    cli = CliRunner()
    r = cli.invoke(
        app,
        ["tests", "generate", str(tasks), "--out", str(suite), "--seed", "4", "--max-tests", "10"],
    )
    assert r.exit_code == 0, r.output
    row = json.loads(suite.read_text())
    assert row["format"] == "assay-suite/1" and 1 <= len(row["tests"]) <= 10
    r = cli.invoke(app, ["tests", "report", str(suite), "--json", "--min-mutation-score", "0.5"])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.output.splitlines()]
    assert lines[0]["id"] == "a/0" and lines[0]["min_mutation_score"] == 0.5
    assert lines[-1]["problems"] == 1
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        json.dumps({"task_id": "a/0", "completion": "    return a + b\n"})
        + "\n"
        + json.dumps({"task_id": "a/0", "completion": "    return a - b\n"})
        + "\n"
    )
    out = tmp_path / "r.jsonl"
    r = cli.invoke(
        app,
        [
            "eval",
            str(suite),
            "--format",
            "assay",
            "--samples",
            str(samples),
            "--out",
            str(out),
            "--records",
            "off",
        ],
    )
    assert r.exit_code == 0, r.output
    verdicts = {
        r["sample_index"]: r["verdict"] for r in map(json.loads, out.read_text().splitlines())
    }
    assert verdicts == {0: "accepted", 1: "wrong_answer"}


def test_bad_rows_are_usage_errors(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "a/0", "prompt": PROMPT, "entry_point": "add"}) + "\n")
    r = CliRunner().invoke(app, ["tests", "generate", str(tasks), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "reference" in r.output
