"""AceCoder (TIGER-Lab/AceCode-87K): one script test per assert string in ``test_cases``."""

from __future__ import annotations

from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=5.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    cases = rec.get("test_cases")
    if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
        raise ValidationError("test_cases", f"{rec.get('id')}: must be a list of assert strings")
    return Problem(
        str(rec.get("id", "")),
        [TestCase(kind="script", code=c) for c in cases],
        limits=LIMITS,
        metadata={"prompt": rec.get("question", "")},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
