"""HumanEval+ / MBPP+ (EvalPlus release files): ``call`` tests on the base and plus inputs.

The release files carry inputs only. Expected outputs are the canonical solution's answers,
computed by running it in the sandbox (never on the host) with the same call protocol the
submissions face. Floats compare with the task's ``atol`` (EvalPlus uses 1e-6 when it is 0)
and a relative tolerance of 1e-7, as EvalPlus does.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from typing import Any

from .._pysource import parse_quietly
from ..errors import ValidationError
from ..judge import Problem, TestCase, values
from ..judge.calls import call_values
from ..runner import Runner
from ..types import Limits

LIMITS = Limits(time_s=60.0, wall_s=240.0, memory_mb=2048)


def problem(rec: dict[str, Any], which: str) -> Problem:
    inputs = _inputs(rec["base_input"])
    if which == "plus":
        inputs += _inputs(rec.get("plus_input") or "[]")
    param_types = _param_types(rec)
    if param_types:
        inputs = [
            [_restore(a, param_types.get(i, "")) for i, a in enumerate(args)] for args in inputs
        ]
    atol = float(rec.get("atol") or 0)
    entry = rec["entry_point"]
    tests = [
        TestCase(
            kind="call",
            name=f"{which}-{i}",
            options={"fn_name": entry, "args": args, "atol": atol or 1e-6, "rtol": 1e-7},
        )
        for i, args in enumerate(inputs)
    ]
    reference = rec["prompt"] + rec["canonical_solution"]
    if rec["task_id"].startswith("Mbpp"):
        reference = rec["canonical_solution"]
    return Problem(
        rec["task_id"],
        tests,
        limits=LIMITS,
        references=[reference],
        metadata={
            "prompt": rec["prompt"],
            "entry_point": entry,
            "expected_pending": True,
            "param_types": {str(k): v for k, v in param_types.items()},
        },
    )


def _param_types(rec: dict[str, Any]) -> dict[int, str]:
    """For each argument position, the types the task's contract allows (``assert
    isinstance(test_tup, tuple)``), as written. The release files are JSON, so tuples
    arrive as lists and complex numbers as strings; the contract tells how to turn them back."""
    allowed: dict[str, str] = {}
    for name, types in re.findall(
        r"isinstance\((\w+),\s*(\([^)]*\)|\w+)\)", rec.get("contract") or ""
    ):
        allowed[name] = allowed.get(name, "") + " " + types
    if not allowed:
        return {}
    try:
        tree = parse_quietly(rec["prompt"] + rec["canonical_solution"])
    except SyntaxError:
        return {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == rec["entry_point"]:
            return {i: allowed[a.arg] for i, a in enumerate(node.args.args) if a.arg in allowed}
    return {}


def _deep_tuple(value: Any) -> Any:
    return tuple(_deep_tuple(v) for v in value) if isinstance(value, list | tuple) else value


def _restore(value: Any, types: str, deep: bool = False) -> Any:
    if "tuple" in types and "list" not in types:
        if deep and isinstance(value, list | tuple):
            return _deep_tuple(value)
        if isinstance(value, list):
            return tuple(value)
    if (
        isinstance(value, str)
        and "str" not in types
        and re.search(r"\b(complex|int|float)\b", types)
    ):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def _inputs(raw: Any) -> list[list[Any]]:
    data = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(data, list):
        raise ValidationError("base_input", "must be a list of argument lists")
    return [list(a) for a in data]


def with_expected(runner: Runner, prob: Problem) -> Problem:
    """Fill every test's expected value from the canonical solution, run in the sandbox."""
    entry = prob.metadata["entry_point"]
    calls = [(entry, list(t.options["args"])) for t in prob.tests]
    replies, result = call_values(runner, prob.references[0].encode(), calls, prob.limits)
    deep = prob.metadata.get("param_types")
    if deep and (len(replies) != len(calls) or not all(ok for ok, _ in replies)):
        # Nested tuples (a tuple of tuples) also arrive as lists: try the deep form.
        types: dict[int, str] = {int(k): v for k, v in deep.items()}
        fixed = [
            [_restore(a, types.get(i, ""), deep=True) for i, a in enumerate(t.options["args"])]
            for t in prob.tests
        ]
        retry, result = call_values(
            runner, prob.references[0].encode(), [(entry, a) for a in fixed], prob.limits
        )
        if len(retry) == len(calls) and all(ok for ok, _ in retry):
            replies = retry
            prob = replace(
                prob,
                tests=[
                    replace(t, options={**t.options, "args": a})
                    for t, a in zip(prob.tests, fixed, strict=True)
                ],
            )
    if len(replies) != len(calls) or not all(ok for ok, _ in replies):
        bad = next((v for ok, v in replies if not ok), result.status)
        raise ValidationError(
            "canonical_solution", f"{prob.id}: the reference does not answer every input ({bad})"
        )
    tests = [
        replace(t, expected_value=values.plain(v))
        for t, (_ok, v) in zip(prob.tests, replies, strict=True)
    ]
    meta = {k: v for k, v in prob.metadata.items() if k not in ("expected_pending", "param_types")}
    return replace(prob, tests=tests, metadata=meta)


def load(records: list[dict[str, Any]], which: str = "plus") -> list[Problem]:
    return [problem(r, which) for r in records]
