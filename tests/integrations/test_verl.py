"""veRL's compute_score family, judged for real in the sandbox."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from assay import Limits, LocalExecutor, Problem, TestCase
from assay.integrations.verl import (
    KEYS,
    compute_score,
    compute_score_async,
    compute_score_batch,
)

from .helpers import fenced

ADD_STDIO = "a, b = map(int, input().split())\nprint(a + b)"
ADD_FN = "def add(a, b):\n    return a + b"
LCB_FN = "class Solution:\n    def add(self, a, b):\n        return a + b"

# (name, ground truth, extra_info, correct code, wrong code)
DIALECTS: list[tuple[str, Any, dict[str, Any] | None, str, str]] = [
    (
        "apps-stdio",
        {"input_output": json.dumps({"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]})},
        None,
        ADD_STDIO,
        "print(3)",
    ),
    (
        "apps-fn",
        json.dumps({"inputs": [[1, 2], [5, 5]], "outputs": [[3], [10]], "fn_name": "add"}),
        None,
        ADD_FN,
        "def add(a, b):\n    return a - b",
    ),
    (
        "verl-stdio",
        {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]},
        None,
        ADD_STDIO,
        "print(input())",
    ),
    (
        "prime-stdio",
        json.dumps(
            {
                "language": "python",
                "test_cases": [{"type": "stdin_stdout", "input": "2 2\n", "output": "4\n"}],
            }
        ),
        None,
        ADD_STDIO,
        "print(5)",
    ),
    (
        "prime-fn",
        {
            "test_cases": [
                {"type": "function_call", "fn_name": "add", "input": [2, 3], "output": [5]}
            ]
        },
        None,
        ADD_FN,
        "def add(a, b):\n    return str(a + b)",
    ),
    (
        "lcb-functional",
        json.dumps([{"input": "2\n3", "output": "5", "testtype": "functional"}]),
        {"metadata": json.dumps({"func_name": "add"})},
        LCB_FN,
        "class Solution:\n    def add(self, a, b):\n        return 0",
    ),
    (
        "lcb-stdin",
        [{"input": "4 4\n", "output": "8\n", "testtype": "stdin"}],
        None,
        ADD_STDIO,
        "raise SystemExit(1)",
    ),
    ("asserts", ["assert add(1, 2) == 3", "assert add(0, 0) == 0"], None, ADD_FN, "add = max"),
    (
        "problem",
        Problem("p", [TestCase(input="7 1\n", expected="8\n")]),
        None,
        ADD_STDIO,
        "print(7)",
    ),
]


@pytest.mark.parametrize("case", DIALECTS, ids=[d[0] for d in DIALECTS])
def test_each_dialect_scores_correct_and_wrong(
    case: tuple[str, Any, dict[str, Any] | None, str, str], executor: LocalExecutor
) -> None:
    name, gt, extra, good, bad = case
    rows = compute_score_batch(
        [name, name], [fenced(good), fenced(bad)], [gt, gt], [extra, extra], executor=executor
    )
    assert rows[0]["score"] == 1.0, rows[0]
    assert rows[0]["acc"] is True and rows[0]["valid"] is True
    assert rows[0]["passed"] == rows[0]["total"] > 0
    assert rows[1]["score"] == 0.0 and rows[1]["acc"] is False, rows[1]
    assert rows[1]["valid"] is True  # the program's own failure is a real 0
    assert rows[1]["verdict"] != "accepted"


def test_batch_rows_share_keys_and_bad_rows_are_masked(executor: LocalExecutor) -> None:
    gt = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    rows = compute_score_batch(
        ["a"] * 5,
        [fenced(ADD_STDIO), fenced("print(0)"), "no code at all", fenced(ADD_STDIO), "x"],
        [gt, gt, gt, {"bogus": 1}, "[not json"],
        executor=executor,
    )
    assert all(tuple(r) == KEYS for r in rows)
    assert [r["score"] for r in rows] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [r["valid"] for r in rows] == [True, True, True, False, False]
    assert rows[3]["verdict"] == "invalid_input" and "bogus" in rows[3]["reason"]
    assert all(isinstance(r["score"], float) for r in rows)


def test_a_clean_batch_has_no_invalid_rows(executor: LocalExecutor) -> None:
    gt = json.dumps({"inputs": ["1 2\n", "2 2\n"], "outputs": ["3\n", "4\n"]})
    codes = [ADD_STDIO, "print(3)", ADD_STDIO, ADD_STDIO]  # GRPO groups repeat programs
    rows = compute_score_batch(["a"] * 4, [fenced(c) for c in codes], [gt] * 4, executor=executor)
    assert all(r["valid"] for r in rows)
    assert [r["passed"] for r in rows] == [2, 1, 2, 2]
    assert {tuple(r) for r in rows} == {KEYS}


def test_sandbox_errors_are_valid_false_not_a_silent_zero(
    broken_executor: LocalExecutor,
) -> None:
    row = compute_score("a", fenced(ADD_STDIO), {"inputs": ["1"], "outputs": ["1"]},
                        executor=broken_executor)  # fmt: skip
    assert tuple(row) == KEYS
    assert row["score"] == 0.0 and row["valid"] is False
    assert row["verdict"] == "sandbox_error" and "fork server died" in row["reason"]


def test_fraction_reward_and_single_row(executor: LocalExecutor) -> None:
    gt = {"inputs": ["1 2\n", "2 2\n"], "outputs": ["3\n", "4\n"]}
    row = compute_score("a", fenced("print(3)"), gt, None, executor=executor, reward="fraction")
    assert row["score"] == 0.5 and row["acc"] is False and row["passed"] == 1


def test_async_forms(executor: LocalExecutor) -> None:
    gt = {"inputs": ["1 2\n"], "outputs": ["3\n"]}

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        return await asyncio.gather(
            compute_score_async("a", fenced(ADD_STDIO), gt, executor=executor),
            compute_score_async("a", fenced("print(1)"), gt, executor=executor),
        )

    good, bad = asyncio.run(main())
    assert (good["score"], bad["score"]) == (1.0, 0.0)


def test_language_from_the_ground_truth(executor: LocalExecutor) -> None:
    info = {
        "language": "bash",
        "test_cases": [{"type": "stdin_stdout", "input": "hi\n", "output": "hi\n"}],
    }
    row = compute_score("a", fenced("read x; echo $x", "bash"), info, executor=executor)
    assert row["score"] == 1.0, row


def test_unknown_keywords_are_ignored_but_bad_options_raise(executor: LocalExecutor) -> None:
    gt = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    row = compute_score("a", fenced(ADD_STDIO), gt, executor=executor, memory_limit_mb=512)
    assert row["score"] == 1.0
    with pytest.raises(ValueError, match="reward"):
        compute_score("a", "x", gt, executor=executor, reward="nonsense")


def test_deadline_rows_are_masked(executor: LocalExecutor) -> None:
    gt = {"inputs": ["1\n"], "outputs": ["1\n"]}
    rows = compute_score_batch(
        ["a"],
        [fenced("while True:\n    pass")],
        [gt],
        executor=executor,
        limits=Limits(time_s=1.0),
        deadline_s=0.2,
    )
    assert rows[0]["verdict"] == "deadline" and rows[0]["valid"] is False
    assert rows[0]["score"] == 0.0 and tuple(rows[0]) == KEYS


def test_an_empty_completion_is_no_code_and_scores_zero(executor: LocalExecutor) -> None:
    """Nothing is run for it: ``no_code``, the model's failure (issue 29: runtime_error)."""
    fence = "`" * 3
    rows = compute_score_batch(
        ["x", "x", "x"],
        ["", "  \n", f"{fence}python\n{fence}"],
        [{"inputs": ["1\n"], "outputs": ["1\n"]}] * 3,
        executor=executor,
    )
    assert [(r["verdict"], r["score"], r["valid"]) for r in rows] == [("no_code", 0.0, True)] * 3
