"""``assay tasks from-samples`` / ``from-swebench``: help with an example, usage errors, output."""

from __future__ import annotations

import json
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


def test_from_swebench_sets_verification_limits(tmp_path: Path) -> None:
    repo = tmp_path / "mirrors" / "acme__lib"
    repo.mkdir(parents=True)
    (repo / "lib.py").write_text("def one():\n    return 2\n")
    (repo / "test_lib.py").write_text("from lib import one\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], cwd=repo, check=True)
    base = subprocess.run(
        [*git, "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    (repo / "lib.py").write_text("def one():\n    return 1\n")
    patch = subprocess.run([*git, "diff"], cwd=repo, check=True, capture_output=True, text=True)
    subprocess.run([*git, "checkout", "--", "."], cwd=repo, check=True)
    (repo / "test_lib.py").write_text(
        "from lib import one\n\n\ndef test_one():\n    assert one() == 1\n"
    )
    test_patch = subprocess.run(
        [*git, "diff"], cwd=repo, check=True, capture_output=True, text=True
    )
    row = {
        "instance_id": "acme__lib-1",
        "repo": "acme/lib",
        "base_commit": base,
        "patch": patch.stdout,
        "test_patch": test_patch.stdout,
        "problem_statement": "one() is two",
        "FAIL_TO_PASS": ["test_lib.py::test_one"],
        "PASS_TO_PASS": [],
    }
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    out = tmp_path / "tasks.jsonl"
    args = ["--mirrors", str(tmp_path / "mirrors"), "--out", str(out)]
    done = _assay(
        "tasks", "from-swebench", str(rows), *args, "--time-s", "90", "--memory-mb", "2048"
    )
    assert done.returncode == 0, done.stderr
    (task,) = load_tasks(out)
    assert (task.limits.time_s, task.limits.memory_mb) == (90.0, 2048)
    bad = _assay("tasks", "from-swebench", str(rows), *args, "--memory-mb", "0")
    assert bad.returncode == 2 and "memory_mb" in bad.stderr
