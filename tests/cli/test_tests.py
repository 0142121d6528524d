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


def test_kattis_packages_get_stdin_suites(tmp_path: Path) -> None:
    pkg = tmp_path / "sum"
    for sub in ("data/sample", "data/secret", "submissions/accepted", "input_validators/v"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "data/sample/1.in").write_text("2\n3 4\n")
    (pkg / "data/sample/1.ans").write_text("7\n")
    (pkg / "data/secret/2.in").write_text("3\n1 1 1\n")
    (pkg / "data/secret/2.ans").write_text("3\n")
    (pkg / "submissions/accepted/ok.py").write_text(
        "input()\nprint(sum(map(int, input().split())))\n"
    )
    # accepts 1..5 numbers, each 0..9, on two lines (Kattis: exit 42 = valid)
    (pkg / "input_validators/v/validate.py").write_text(
        "import re, sys\n"
        "t = sys.stdin.read()\n"
        "m = re.fullmatch(r'([1-5])\\n([0-9]( [0-9])*)\\n', t)\n"
        "sys.exit(42 if m and len(m.group(2).split()) == int(m.group(1)) else 43)\n"
    )
    suite = tmp_path / "suite.jsonl"
    r = CliRunner().invoke(
        app, ["tests", "generate", str(tmp_path), "--format", "kattis", "--out", str(suite)]
    )
    assert r.exit_code == 0, r.output
    row = json.loads(suite.read_text())
    assert row["id"] == "sum" and row["metadata"]["quality"]["validator"] is True
    inputs = [t["input"] for t in row["tests"]]
    assert {"2\n3 4\n", "3\n1 1 1\n"} <= set(inputs) and len(inputs) > 2
    for t in row["tests"]:
        n, xs = t["input"].split("\n")[:2]
        assert len(xs.split()) == int(n) <= 5 and all(0 <= int(x) <= 9 for x in xs.split())
        assert t["expected"] == f"{sum(map(int, xs.split()))}\n"
