"""APPS and TACO (``input_output`` JSON, with or without ``fn_name``).

Without ``fn_name`` every pair is a stdio test (outputs compared token-wise; an output given
as a list of lines is joined). With ``fn_name`` every pair is a call test: ``inputs[i]`` is
the argument list (a non-list is one argument), and, as the APPS harness does, the expected
value may also be ``outputs[i][0]`` when the output is wrapped in a one-element list, with
tuples compared as lists. LeetCode-style ``class Solution`` methods are found by the call
server. Both the record's ``input_output`` as a JSON string and as an object are accepted.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=4.0, memory_mb=1024)


def _io(rec: dict[str, Any]) -> dict[str, Any]:
    raw = rec.get("input_output")
    data = json.loads(raw) if isinstance(raw, str) else raw
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("inputs"), list)
        or not isinstance(data.get("outputs"), list)
    ):
        raise ValidationError("input_output", f"{_id(rec)}: needs lists 'inputs' and 'outputs'")
    if len(data["inputs"]) != len(data["outputs"]):
        raise ValidationError("input_output", f"{_id(rec)}: inputs and outputs differ in length")
    return data


def _id(rec: dict[str, Any]) -> str:
    return str(rec.get("task_id", rec.get("problem_id", rec.get("id", ""))))


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def _listify(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_listify(v) for v in value]
    return value


def problem(rec: dict[str, Any]) -> Problem:
    io = _io(rec)
    fn = io.get("fn_name")
    tests: list[TestCase] = []
    for i, (inp, out) in enumerate(zip(io["inputs"], io["outputs"], strict=True)):
        if fn:
            args = inp if isinstance(inp, list) else [inp]
            also = [out[0]] if isinstance(out, list) and len(out) == 1 else []
            tests.append(
                TestCase(
                    kind="call",
                    name=f"call-{i}",
                    options={"fn_name": fn, "args": args, "also": also, "tuples_as_lists": True},
                    expected_value=out,
                )
            )
        else:
            tests.append(
                TestCase(kind="stdio", name=f"stdio-{i}", input=_text(inp), expected=_text(out))
            )
    solutions = rec.get("solutions") or []
    if isinstance(solutions, str):
        solutions = json.loads(solutions) if solutions.strip() else []
    return Problem(
        _id(rec),
        tests,
        limits=LIMITS,
        references=list(solutions),
        metadata={"prompt": rec.get("question", ""), "starter_code": rec.get("starter_code", "")},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
