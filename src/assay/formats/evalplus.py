"""HumanEval+ / MBPP+ (EvalPlus release files): ``call`` tests on the base and plus inputs.

The release files carry inputs only. Expected outputs are the canonical solution's answers,
computed by running it in the sandbox (never on the host) with the same call protocol the
submissions face. Floats compare with the task's ``atol`` (EvalPlus uses 1e-6 when it is 0)
and a relative tolerance of 1e-7, as EvalPlus does.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..judge.calls import call_values
from ..runner import Runner
from ..types import Limits

LIMITS = Limits(time_s=60.0, wall_s=240.0, memory_mb=2048)


def problem(rec: dict[str, Any], which: str) -> Problem:
    inputs = _inputs(rec["base_input"])
    if which == "plus":
        inputs += _inputs(rec.get("plus_input") or "[]")
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
        metadata={"prompt": rec["prompt"], "entry_point": entry, "expected_pending": True},
    )


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
    if len(replies) != len(calls) or not all(ok for ok, _ in replies):
        bad = next((v for ok, v in replies if not ok), result.status)
        raise ValidationError(
            "canonical_solution", f"{prob.id}: the reference does not answer every input ({bad})"
        )
    tests = [replace(t, expected_value=v) for t, (_ok, v) in zip(prob.tests, replies, strict=True)]
    meta = {k: v for k, v in prob.metadata.items() if k != "expected_pending"}
    return replace(prob, tests=tests, metadata=meta)


def load(records: list[dict[str, Any]], which: str = "plus") -> list[Problem]:
    return [problem(r, which) for r in records]
