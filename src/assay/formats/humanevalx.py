"""HumanEval-X (THUDM/CodeGeeX), Python: one script test per task. The test program names
the function directly and ends with ``check(entry)``; the prompt runs first on the test side."""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    test = TestCase(kind="script", code=rec["test"], options={"setup": rec["prompt"]})
    return Problem(
        rec["task_id"],
        [test],
        limits=LIMITS,
        references=[rec["prompt"] + rec["canonical_solution"]],
        metadata={"prompt": rec["prompt"], "language": "python"},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    langs = {str(r.get("task_id", "")).split("/")[0] for r in records}
    if langs - {"Python"}:
        raise ValidationError(
            "format", f"humaneval-x: only Python is judged so far (found {sorted(langs)})"
        )
    return [problem(r) for r in records]
