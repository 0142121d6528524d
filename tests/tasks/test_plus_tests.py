"""HumanEval+ hidden test files: values as source of any size, EvalPlus comparison, grouping."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from assay import Runner
from assay.sessions import Session
from assay.tasks._git import apply_patch
from assay.tasks.codet import from_samples
from assay.tasks.plus_tests import source

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
