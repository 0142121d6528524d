"""PrimeIntellect / open-r1 ``verification_info``: a JSON object (or string) with
``test_cases`` of type ``stdin_stdout`` or ``function_call`` (``fn_name``, ``input`` as the
argument list, ``output`` as the expected value; a one-element output list also matches
its element, as in APPS)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=4.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    raw = rec.get("verification_info")
    info = json.loads(raw) if isinstance(raw, str) else raw
    pid = str(rec.get("problem_id", rec.get("id", "")))
    if not isinstance(info, dict) or not isinstance(info.get("test_cases"), list):
        raise ValidationError("verification_info", f"{pid}: needs a list 'test_cases'")
    tests = []
    for i, case in enumerate(info["test_cases"]):
        kind = case.get("type")
        if kind == "stdin_stdout":
            tests.append(
                TestCase(
                    kind="stdio",
                    name=f"stdio-{i}",
                    input=str(case["input"]),
                    expected=str(case["output"]),
                )
            )
        elif kind == "function_call":
            args = case["input"] if isinstance(case["input"], list) else [case["input"]]
            out = case["output"]
            also = [out[0]] if isinstance(out, list) and len(out) == 1 else []
            opts = {"fn_name": case["fn_name"], "args": args, "also": also, "tuples_as_lists": True}
            tests.append(TestCase(kind="call", name=f"call-{i}", options=opts, expected_value=out))
        else:
            raise ValidationError(
                f"verification_info.test_cases[{i}].type", f"{pid}: unknown type {kind!r}"
            )
    return Problem(pid, tests, limits=LIMITS, metadata={"prompt": rec.get("prompt", "")})


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
