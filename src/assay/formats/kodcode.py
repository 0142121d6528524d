"""KodCode (KodCode/KodCode-V1): a pytest file per task (``test``) importing from
``solution``; ``solution`` is the reference."""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    test = rec.get("test")
    pid = str(rec.get("question_id", rec.get("id", "")))
    if not isinstance(test, str) or not test.strip():
        raise ValidationError("test", f"{pid}: needs the pytest file as a string")
    return Problem(
        pid,
        [TestCase(kind="pytest", code=test)],
        limits=LIMITS,
        references=[rec["solution"]] if isinstance(rec.get("solution"), str) else [],
        metadata={"prompt": rec.get("question", "")},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
