"""HumanEval+ hidden test files: values as source of any size, the judge's comparison, grouping."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from assay import Runner
from assay.judge import Problem, TestCase
from assay.sessions import Session
from assay.tasks._git import apply_patch
from assay.tasks.codet import from_samples
from assay.tasks.plus_tests import render, source

CORPORA = Path(os.environ.get("ASSAY_CORPORA", Path(__file__).parents[3] / "shared" / "corpora"))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -7,
        3.5,
        "a'b\n",
        b"\x00",
        [1, (2,)],
        (),
        {"k": {1, 2}},
        frozenset({3}),
        complex(1, -2),
        10**5000,
        -(10**5000),
    ],
    ids=lambda v: type(v).__name__,
)
def test_source_round_trips(value: object) -> None:
    assert eval(compile(source(value), "<v>", "eval")) == value


def test_special_floats() -> None:
    assert math.isnan(eval(source(float("nan"))))
    assert eval(source(float("-inf"))) == float("-inf")
    with pytest.raises(ValueError):
        source(object())


def _hidden(expected: list[object]) -> dict[str, object]:
    """The rendered hidden file, run against ``solution`` as a module namespace."""
    tests = [
        TestCase(kind="call", options={"args": [i]}, expected_value=v)
        for i, v in enumerate(expected)
    ]
    text = render(
        {"task_id": "T/0", "entry_point": "f", "atol": 0}, Problem("T/0", tests[:1]), tests[1:]
    )
    namespace: dict[str, object] = {"__name__": "test_hidden"}
    exec(
        compile(text.replace("from solution import f as candidate", ""), "test_hidden.py", "exec"),
        namespace,
    )
    return namespace


def test_hidden_file_compares_as_the_judge_does() -> None:
    """Floats within the tolerance, an int for a float, NaN for NaN; a bool unequal to the
    number, a tuple for a list, a far float are wrong: the judge's own ``equal``."""
    answers = {0: 0.1 + 0.2, 1: 3, 2: float("nan"), 3: [1, 2]}
    ns = _hidden([0.3, 3.0, float("nan"), [1, 2]])
    ns["candidate"] = answers.__getitem__
    for name in [n for n in ns if n.startswith("test_")]:
        ns[name]()  # type: ignore[operator]
    for wrong in ({0: 0.31}, {1: True}, {3: (1, 2)}):
        ns["candidate"] = {**answers, **wrong}.__getitem__
        with pytest.raises(AssertionError):
            for name in [n for n in ns if n.startswith("test_")]:
                ns[name]()  # type: ignore[operator]


@pytest.mark.skipif(not (CORPORA / "humanevalplus").is_dir(), reason="needs ../shared/corpora")
def test_plus_repair_task(runner: Runner) -> None:
    (task,) = from_samples(
        CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl",
        CORPORA / "humaneval" / "HumanEval.jsonl.gz",
        runner,
        tasks={"HumanEval/13"},
        plus_path=CORPORA / "humanevalplus" / "HumanEvalPlus.jsonl.gz",
    )
    text = task.tests["test_hidden.py"]
    assert task.metadata["tests"] == "humanevalplus" and "def test_plus_000" in text
    with Session.for_task(runner, task) as s:
        v = s.verify()
        assert v.verdict == "failed" and v.total > 10
        kinds = {n.split("::")[1].rsplit("_", 1)[0] for n in v.tests}
        assert kinds == {"test_base", "test_plus"}
        s.write_file(
            "solution.py", apply_patch(task.files, task.reference_patch or "", "p")["solution.py"]
        )
        assert s.verify().verdict == "accepted"
