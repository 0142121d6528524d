"""MBPP, full (``text, code, test_setup_code, test_list``) and sanitized (``prompt, code,
test_imports, test_list``), told apart by their fields: one script test per assert."""

from __future__ import annotations

import ast
from typing import Any

from .._pysource import parse_quietly
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    setup = "\n".join(rec.get("test_imports") or [])
    if rec.get("test_setup_code"):
        setup = (setup + "\n" + rec["test_setup_code"]).strip()
    requires = _required(rec["code"], rec["test_list"])
    tests = [
        TestCase(kind="script", code=t, options={"setup": setup, "requires": requires})
        for t in rec["test_list"]
    ]
    text = rec.get("text") or rec.get("prompt") or ""
    return Problem(
        str(rec["task_id"]),
        tests,
        limits=LIMITS,
        references=[rec["code"]],
        metadata={"prompt": text, "variant": "full" if "text" in rec else "sanitized"},
    )


def _required(reference: str, asserts: list[str]) -> list[str]:
    """The reference's top-level functions and classes that the asserts call: the names the
    task asks for. A submission without one of them fails its tests the way a missing
    function fails MBPP+'s call tests (the call raises: runtime_error), not with a NameError
    on the test side (which would read as a wrong answer)."""
    try:
        tree = parse_quietly(reference)
        called = {
            node.func.id
            for text in asserts
            for node in ast.walk(parse_quietly(text))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
    except SyntaxError:
        return []
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    return [name for name in defined if name in called]


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
