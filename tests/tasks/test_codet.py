"""CodeT repair tasks: hidden tests from HumanEval's check, the canonical diff, the converter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay import Runner
from assay.sessions import Session
from assay.tasks.codet import from_samples, hidden_tests, repair_task

# HumanEval/53 (openai/human-eval, MIT), trimmed to two asserts.
REC = {
    "task_id": "HumanEval/53",
    "prompt": 'def add(x: int, y: int):\n    """Add two numbers x and y"""\n',
    "canonical_solution": "    return x + y\n",
    "entry_point": "add",
    "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate(0, 1) == 1\n"
    "    assert candidate(5, 7) == 12\n",
}
CORPORA = Path(os.environ.get("ASSAY_CORPORA", Path(__file__).parents[3] / "shared" / "corpora"))


def test_hidden_tests_split_the_asserts() -> None:
    text = hidden_tests(REC)
    assert "from solution import add as candidate" in text
    assert "def test_assert_00():\n    assert candidate(0, 1) == 1" in text
    assert "def test_assert_01():" in text
    loop = {
        **REC,
        "test": "def check(candidate):\n    for i in range(3):\n        assert candidate(i, 0) == i\n",
    }
    assert hidden_tests(loop).rstrip().endswith("def test_check():\n    check(candidate)")


def test_repair_task_verifies(runner: Runner) -> None:
    task = repair_task(REC, "    return x - y\n", 7)
    assert task.task_id == "HumanEval/53/sample-7"
    assert "-    return x - y" in (task.reference_patch or "")
    with Session.for_task(runner, task) as s:
        assert (s.verify().passed, s.verify().total) == (0, 2)
        s.write_file("solution.py", REC["prompt"] + REC["canonical_solution"])
        v = s.verify(diagnosis={"lines": ["solution.py:3"]})
        assert v.verdict == "accepted" and v.diagnosis_score == 1.0


@pytest.mark.skipif(not (CORPORA / "codet").is_dir(), reason="needs ../shared/corpora/codet")
def test_converter_on_the_real_samples(runner: Runner) -> None:
    tasks = list(
        from_samples(
            CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl",
            CORPORA / "humaneval" / "HumanEval.jsonl.gz",
            runner,
            tasks={"HumanEval/0", "HumanEval/2"},
            per_task=2,
        )
    )
    assert [t.metadata["humaneval_task"] for t in tasks] == ["HumanEval/0"] * 2 + [
        "HumanEval/2"
    ] * 2
    for task in tasks[:2]:
        with Session.for_task(runner, task) as s:
            assert s.verify().verdict == "failed"  # a sample HumanEval's tests reject


@pytest.mark.skipif(not (CORPORA / "codet").is_dir(), reason="needs ../shared/corpora/codet")
def test_a_sample_importing_a_module_nothing_installs_makes_no_task(runner: Runner) -> None:
    """HumanEval/23's sample 11 ends with ``from register import registerObj``: verification
    counts that as the environment's fault, so its task could never be judged (``make demo``'s
    looper got a sandbox_error). The converter passes it over; every task it makes can be
    verified, before and after the agent's edit."""
    (task,) = from_samples(
        CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl",
        CORPORA / "humaneval" / "HumanEval.jsonl.gz",
        runner,
        tasks={"HumanEval/23"},
    )
    assert task.task_id != "HumanEval/23/sample-11"
    with Session.for_task(runner, task) as s:
        assert s.verify().verdict == "failed"
