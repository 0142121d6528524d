"""APPS/TACO records (written for these tests, in the datasets' shapes)."""

from __future__ import annotations

import json

import pytest

from assay import Runner, ValidationError, formats
from assay.judge import Judge, Submission

STDIO = {
    "problem_id": 1,
    "question": "Print the sum of two integers.",
    "solutions": json.dumps(["a, b = map(int, input().split())\nprint(a + b)"]),
    "input_output": json.dumps({"inputs": ["1 2\n", "10 -3\n"], "outputs": ["3\n", ["7"]]}),
}
CALL = {
    "problem_id": 2,
    "question": "Return the two smallest values, in order.",
    "solutions": ["def two_smallest(xs):\n    return tuple(sorted(xs)[:2])"],
    "input_output": {
        "fn_name": "two_smallest",
        "inputs": [[[3, 1, 2]], [[5, 4]]],
        "outputs": [[[1, 2]], [4, 5]],
    },
}
LEETCODE = {
    "task_id": "taco-3",
    "input_output": {"fn_name": "add", "inputs": [[1, 2]], "outputs": [3]},
}


def _load(tmp_path, *records):  # type: ignore[no-untyped-def]
    path = tmp_path / "apps.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    return formats.load(path, "apps")


def test_stdio_and_call_problems(tmp_path, runner: Runner) -> None:  # type: ignore[no-untyped-def]
    stdio, call = _load(tmp_path, STDIO, CALL)
    assert [t.kind for t in stdio.tests] == ["stdio", "stdio"] and stdio.tests[1].expected == "7"
    judge = Judge(runner)
    assert judge.judge(Submission(stdio, stdio.references[0])).verdict == "accepted"
    # Outputs wrapped in one-element lists and tuples-as-lists, as the APPS harness allows.
    assert judge.judge(Submission(call, call.references[0])).verdict == "accepted"
    assert (
        judge.judge(Submission(call, "def two_smallest(xs):\n    return [0, 0]")).verdict
        == "wrong_answer"
    )


def test_leetcode_style_solution_class(tmp_path, runner: Runner) -> None:  # type: ignore[no-untyped-def]
    (problem,) = _load(tmp_path, LEETCODE)
    code = "class Solution:\n    def add(self, a, b):\n        return a + b\n"
    assert Judge(runner).judge(Submission(problem, code)).verdict == "accepted"


def test_malformed_input_output_names_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = {"problem_id": 9, "input_output": json.dumps({"inputs": ["1"], "outputs": []})}
    with pytest.raises(ValidationError) as info:
        _load(tmp_path, bad)
    assert info.value.field == "input_output"
