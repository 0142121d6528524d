"""``assay eval`` as a new user meets it (issue 14): bad arguments are one line naming the
argument (exit 2), bad sample rows cost only themselves, fences are stripped, a completion
without code is ``no_code``, rows come in input order, pass@k for every k the samples allow,
and the output reads at 80 columns."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"
MBPP = CORPORA / "mbpp" / "mbpp-full.jsonl"
HUMANEVAL_X_JS = CORPORA / "humaneval_x" / "humaneval_js.jsonl.gz"
ASSAY = str(Path(sys.executable).with_name("assay"))
F = "`" * 3

pytestmark = pytest.mark.skipif(not HUMANEVAL.exists(), reason="corpora not found")


def assay(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [ASSAY, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        check=False,
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def one_mbpp_task(tmp_path: Path) -> Path:
    """MBPP task 1 (min_cost), the first record of the full set."""
    first = MBPP.read_text().splitlines()[0]
    return write_jsonl(tmp_path / "mbpp.jsonl", [json.loads(first)])


def usage_line(proc: subprocess.CompletedProcess[str], argument: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {argument}: "), lines[0]
    return lines[0]


def test_bad_arguments_are_one_line_naming_the_argument(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "s.jsonl", [{"task_id": "HumanEval/2", "completion": "  pass"}])
    out = tmp_path / "r.jsonl"
    base = ["eval", HUMANEVAL, "--format", "humaneval"]

    line = usage_line(assay(*base, "--samples", tmp_path / "none.jsonl", "--out", out), "--samples")
    assert "does not exist" in line
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "HumanEval/2"\n')
    line = usage_line(assay(*base, "--samples", bad, "--out", out), "--samples")
    assert "line 1" in line

    line = usage_line(
        assay(*base, "--samples", good, "--out", tmp_path / "nodir" / "r.jsonl"), "--out"
    )
    assert "nodir" in line

    proc = assay("eval", MBPP, "--format", "humaneval", "--samples", good, "--out", out)
    line = usage_line(proc, "DATASET")
    assert "humaneval" in line and "KeyError" not in line

    line = usage_line(
        assay("eval", HUMANEVAL, "--format", "MBPQ", "--samples", good, "--out", out), "--format"
    )
    for name in ("humaneval", "mbpp", "mbppplus", "kattis", "multipl-e"):
        assert name in line

    mbpp = one_mbpp_task(tmp_path)
    mbpp_samples = write_jsonl(tmp_path / "m.jsonl", [{"task_id": 1, "solution": "x = 1"}])
    proc = assay(
        "eval",
        mbpp,
        "--format",
        "mbpp",
        "--language",
        "go",
        "--samples",
        mbpp_samples,
        "--out",
        out,
    )
    assert "Python" in usage_line(proc, "--language")
    assert not out.exists()  # no file of sandbox_error rows
    proc = assay(
        "eval",
        mbpp,
        "--format",
        "mbpp",
        "--language",
        "klingon",
        "--samples",
        mbpp_samples,
        "--out",
        out,
    )
    assert "klingon" in usage_line(proc, "--language")
    proc = assay(
        "eval", mbpp, "--format", "mbpp", "--tests", "base", "--samples", mbpp_samples, "--out", out
    )
    usage_line(proc, "--tests")


def test_format_names_are_case_insensitive(tmp_path: Path) -> None:
    mbpp = one_mbpp_task(tmp_path)
    samples = write_jsonl(tmp_path / "m.jsonl", [{"task_id": 1, "solution": "x = 1"}])
    proc = assay(
        "eval",
        mbpp,
        "--format",
        "MBPP",
        "--samples",
        samples,
        "--out",
        tmp_path / "r.jsonl",
        "--records",
        "off",
    )
    assert proc.returncode == 0, proc.stderr


def test_an_unknown_task_costs_its_row_only(tmp_path: Path) -> None:
    samples = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"},
            {"task_id": "HumanEval/999", "completion": "    pass\n"},
            {"task_id": "HumanEval/2", "no_code_field": 1},
        ],
    )
    out = tmp_path / "r.jsonl"
    proc = assay(
        "eval",
        HUMANEVAL,
        "--format",
        "humaneval",
        "--samples",
        samples,
        "--out",
        out,
        "--records",
        "off",
    )
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    assert [r["verdict"] for r in rows] == ["accepted", None, None]
    assert "HumanEval/999" in rows[1]["reason"] and "line 2" in rows[1]["reason"]
    assert "line 3" in rows[2]["reason"] and rows[2]["reward"] is None
    assert "HumanEval/999" in proc.stderr and "line 3" in proc.stderr


def test_fences_are_stripped_and_a_completion_without_code_is_no_code(tmp_path: Path) -> None:
    fenced = (
        f"Here you go:\n{F}python\ndef truncate_number(number):\n    return number % 1.0\n{F}\n"
    )
    samples = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"task_id": "HumanEval/2", "completion": fenced},
            {"task_id": "HumanEval/2", "solution": f"{F}python\n{F}"},
            {"task_id": "HumanEval/2", "completion": "   \n"},
        ],
    )
    out = tmp_path / "r.jsonl"
    proc = assay(
        "eval",
        HUMANEVAL,
        "--format",
        "humaneval",
        "--samples",
        samples,
        "--out",
        out,
        "--records",
        "off",
    )
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    assert [(r["verdict"], r["reward"]) for r in rows] == [
        ("accepted", 1.0),
        ("no_code", 0.0),
        ("no_code", 0.0),
    ]
    assert "Traceback" not in proc.stderr


def test_rows_come_in_input_order_and_pass_at_k_uses_every_k_allowed(tmp_path: Path) -> None:
    # The first sample loops to its time limit, so in completion order it would come last.
    loop = {"task_id": "HumanEval/2", "completion": "    while True:\n        pass\n"}
    right = {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}
    wrong = {"task_id": "HumanEval/2", "completion": "    return 0.0\n"}
    other = {"task_id": "HumanEval/0", "completion": "    return False\n"}
    rows_in = [loop, right, other, wrong, other, other]
    samples = write_jsonl(tmp_path / "s.jsonl", rows_in)
    out = tmp_path / "r.jsonl"
    proc = assay(
        "eval",
        HUMANEVAL,
        "--format",
        "humaneval",
        "--samples",
        samples,
        "--out",
        out,
        "--records",
        "off",
        "--time-limit",
        "0.3",
        "--workers",
        "2",
    )
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out)
    assert [(r["task_id"], r["sample_index"]) for r in rows] == [
        ("HumanEval/2", 0),
        ("HumanEval/2", 1),
        ("HumanEval/0", 0),
        ("HumanEval/2", 2),
        ("HumanEval/0", 1),
        ("HumanEval/0", 2),
    ]
    assert rows[0]["verdict"] == "time_limit"
    # Three samples per task: pass@1, pass@2 and pass@3, and no pass@10.
    for k in ("pass@1", "pass@2", "pass@3"):
        assert k in proc.stdout
    assert "pass@10" not in proc.stdout


def test_progress_and_summary_read_at_80_columns(tmp_path: Path) -> None:
    rows_in = [
        {"task_id": "HumanEval/2", "completion": c}
        for c in (
            "    return number % 1.0\n",
            "    return 0.0\n",
            "    raise ValueError\n",
            "    while True:\n        pass\n",
            "",
        )
    ]
    samples = write_jsonl(tmp_path / "s.jsonl", rows_in)
    proc = assay(
        "eval",
        HUMANEVAL,
        "--format",
        "humaneval",
        "--samples",
        samples,
        "--out",
        tmp_path / "r.jsonl",
        "--records",
        "off",
        "--time-limit",
        "0.3",
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert "…" not in text
    assert all(len(line) <= 80 for line in text.splitlines()), text
    for verdict in ("accepted", "wrong_answer", "runtime_error", "time_limit", "no_code"):
        assert verdict in proc.stderr  # the progress line's verdict mix, whole


@pytest.mark.skipif(not HUMANEVAL_X_JS.exists(), reason="HumanEval-X not found")
def test_language_alias_on_humaneval_x(tmp_path: Path) -> None:
    with gzip.open(HUMANEVAL_X_JS, "rt") as fh:
        rec = json.loads(fh.readline())
    dataset = write_jsonl(tmp_path / "js.jsonl", [rec])
    samples = write_jsonl(
        tmp_path / "s.jsonl", [{"task_id": rec["task_id"], "completion": rec["canonical_solution"]}]
    )
    out = tmp_path / "r.jsonl"
    for alias in ("js", "node", "nodejs"):
        proc = assay(
            "eval",
            dataset,
            "--format",
            "humaneval-x",
            "--language",
            alias,
            "--samples",
            samples,
            "--out",
            out,
            "--records",
            "off",
        )
        assert proc.returncode == 0, proc.stderr
        assert [r["verdict"] for r in read_rows(out)] == ["accepted"]
