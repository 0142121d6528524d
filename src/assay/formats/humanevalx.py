"""HumanEval-X (THUDM/CodeGeeX), Python: one script test per task. The test program names
the function directly and ends with ``check(entry)``; the prompt runs first on the test side."""

from __future__ import annotations

import re
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    entry = rec.get("entry_point") or _entry(
        rec["declaration"] if "declaration" in rec else rec["prompt"]
    )
    options: dict[str, Any] = {"setup": rec["prompt"], "requires": [entry] if entry else []}
    test = TestCase(kind="script", code=rec["test"], options=options)
    return Problem(
        rec["task_id"],
        [test],
        limits=LIMITS,
        references=[rec["prompt"] + rec["canonical_solution"]],
        metadata={"prompt": rec["prompt"], "language": "python"},
    )


def _entry(source: str) -> str:
    """The last function the prompt declares (the one to implement)."""
    names = re.findall(r"^def (\w+)\(", source, flags=re.MULTILINE)
    return names[-1] if names else ""


def load(records: list[dict[str, Any]]) -> list[Problem]:
    langs = {str(r.get("task_id", "")).split("/")[0] for r in records}
    if langs - {"Python"}:
        raise ValidationError(
            "format", f"humaneval-x: only Python is judged so far (found {sorted(langs)})"
        )
    return [problem(r) for r in records]
