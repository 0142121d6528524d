"""Turning simple assert-style checks into ``call`` tests.

Most HumanEval checks are lines like ``assert candidate(1, [2]) == 3``. Judged as call tests
they need one sandbox run instead of two, and the comparison runs in the trusted process.
Only checks made *entirely* of such lines (literal arguments, a literal expected value,
``==`` or ``is``) are converted; anything else stays a script test. The comparison keeps the
test's own semantics: Python's ``==`` (or ``is``) on the decoded, plain builtin values.
"""

from __future__ import annotations

import ast
import warnings
from typing import Any

from ..judge import TestCase


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def check_to_calls(
    test_code: str, fn_name: str, candidate: str = "candidate"
) -> list[TestCase] | None:
    """Call tests equivalent to ``check(fn)`` in ``test_code``, or None if it is not simple."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(test_code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1 or [a.arg for a in checks[0].args.args] != [candidate]:
        return None
    others = [n for n in tree.body if n is not checks[0]]
    if not all(isinstance(n, ast.Assign | ast.Expr) and not _calls_anything(n) for n in others):
        return None  # module-level code with effects: keep the script semantics
    tests: list[TestCase] = []
    for stmt in checks[0].body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring or a bare string
        if not isinstance(stmt, ast.Assert):
            return None
        ok, value = _literal(stmt.test)
        if ok:
            if value:
                continue  # ``assert True``: checks nothing
            return None
        test = stmt.test
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq | ast.Is)
        ):
            return None
        call, (expected_node,) = test.left, test.comparators
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == candidate
        ):
            return None
        if call.keywords:
            return None
        args = [_literal(a) for a in call.args]
        ok_expected, expected = _literal(expected_node)
        if not ok_expected or not all(ok for ok, _ in args):
            return None
        op = "is" if isinstance(test.ops[0], ast.Is) else "=="
        if op == "is" and expected not in (True, False, None):
            return None
        tests.append(
            TestCase(
                kind="call",
                name=f"assert-{len(tests)}",
                options={"fn_name": fn_name, "args": [v for _, v in args], "python_op": op},
                expected_value=expected,
            )
        )
    return tests or None


def _calls_anything(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))
