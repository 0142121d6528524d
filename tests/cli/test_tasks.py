"""``assay tasks from-samples`` / ``from-swebench``: help with an example, usage errors, output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.tasks import load_tasks

ASSAY = str(Path(sys.executable).with_name("assay"))
CORPORA = Path(os.environ.get("ASSAY_CORPORA", Path(__file__).parents[3] / "shared" / "corpora"))
SAMPLES = CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl"
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"


def _assay(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([ASSAY, *args], capture_output=True, text=True, timeout=300, env=env)


def test_help_has_examples() -> None:
    for cmd in (["tasks", "from-samples"], ["tasks", "from-swebench"], ["agent", "demo"]):
        out = _assay(*cmd, "--help")
        assert out.returncode == 0 and "Example" in out.stdout, out.stdout


def test_usage_errors_name_the_argument(tmp_path: Path) -> None:
    out = _assay(
        "tasks",
        "from-samples",
        str(tmp_path / "nope.jsonl"),
        "--dataset",
        str(tmp_path),
        "--out",
        str(tmp_path / "o.jsonl"),
    )
    assert out.returncode == 2 and "SAMPLES" in out.stderr
    out = _assay(
        "tasks",
        "from-swebench",
        str(tmp_path / "nope"),
        "--mirrors",
        str(tmp_path),
        "--out",
        str(tmp_path / "o.jsonl"),
    )
    assert out.returncode == 2 and "ROWS" in out.stderr


@pytest.mark.skipif(not SAMPLES.exists(), reason="needs ../shared/corpora/codet")
def test_from_samples_writes_repair_tasks(tmp_path: Path) -> None:
    out_file = tmp_path / "repair.jsonl"
    out = _assay(
        "tasks",
        "from-samples",
        str(SAMPLES),
        "--dataset",
        str(HUMANEVAL),
        "--out",
        str(out_file),
        "--task",
        "HumanEval/0",
        "--task",
        "HumanEval/4",
        "--per-task",
        "1",
    )
    assert out.returncode == 0, out.stderr
    tasks = list(load_tasks(out_file))
    assert [t.metadata["humaneval_task"] for t in tasks] == ["HumanEval/0", "HumanEval/4"]
    assert all(set(t.files) == {"solution.py"} and t.reference_patch for t in tasks)
    assert "2 repair tasks written" in out.stdout
