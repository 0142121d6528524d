"""MBPP, full (``text, code, test_setup_code, test_list``) and sanitized (``prompt, code,
test_imports, test_list``), told apart by their fields: one script test per assert."""

from __future__ import annotations

from typing import Any

from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    setup = "\n".join(rec.get("test_imports") or [])
    if rec.get("test_setup_code"):
        setup = (setup + "\n" + rec["test_setup_code"]).strip()
    tests = [TestCase(kind="script", code=t, options={"setup": setup}) for t in rec["test_list"]]
    text = rec.get("text") or rec.get("prompt") or ""
    return Problem(
        str(rec["task_id"]),
        tests,
        limits=LIMITS,
        references=[rec["code"]],
        metadata={"prompt": text, "variant": "full" if "text" in rec else "sanitized"},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
