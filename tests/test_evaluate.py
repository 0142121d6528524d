"""``assay eval`` end to end on HumanEval with a few samples, and pass@k."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.evaluate import pass_at_k

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"


def test_pass_at_k() -> None:
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 5) == 1.0
    assert abs(pass_at_k(10, 3, 1) - 0.3) < 1e-12
    assert abs(pass_at_k(4, 1, 2) - 0.5) < 1e-12


@pytest.mark.skipif(not HUMANEVAL.exists(), reason="HumanEval corpus not found")
def test_eval_cli(tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    rows = [
        {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"},
        {"task_id": "HumanEval/2", "completion": "    return 0.0\n"},
        {"task_id": "HumanEval/2", "solution": "import sys\nsys.exit(0)\n"},
    ]
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "out.jsonl"
    assay = Path(sys.executable).with_name("assay")
    proc = subprocess.run(
        [
            str(assay),
            "eval",
            str(HUMANEVAL),
            "--format",
            "humaneval",
            "--samples",
            str(samples),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = sorted(
        (json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["sample_index"]
    )
    assert [r["verdict"] for r in got] == ["accepted", "wrong_answer", "runtime_error"]
    assert set(got[0]) == {
        "task_id",
        "sample_index",
        "verdict",
        "reward",
        "passed",
        "total",
        "reason",
    }
    assert "pass@1" in proc.stdout


@pytest.mark.skipif(not HUMANEVAL.exists(), reason="HumanEval corpus not found")
def test_eval_rejects_unknown_task(tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/999", "completion": "pass"}))
    assay = Path(sys.executable).with_name("assay")
    proc = subprocess.run(
        [
            str(assay),
            "eval",
            str(HUMANEVAL),
            "--format",
            "humaneval",
            "--samples",
            str(samples),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "task_id" in proc.stderr
