"""Turning simple assert-style checks into ``call`` tests.

Most HumanEval checks are lines like ``assert candidate(1, [2]) == 3``. Judged as call tests
they need one sandbox run instead of two, and the assertion runs in the trusted process.
Only checks made *entirely* of such lines are converted; anything else stays a script test.
A line may be

- ``assert candidate(ARGS) == E`` (or ``is True/False/None``), optionally with
  ``tuple(...)`` around both sides;
- ``assert candidate(ARGS)`` or ``assert not candidate(ARGS)``;
- ``assert abs(candidate(ARGS) - E) < TOL`` (or ``<=``);

where ARGS, E and TOL are constants: literals, or arithmetic on literals (``3 * 5 * 7``,
``'ab' + 'cd'``, ``2.0/3.0``), folded here under size bounds. An assert's message plays no
part (it is only evaluated once the assertion has failed). The assertion keeps the test's own
semantics, evaluated on the decoded, plain builtin values, with the real builtins (a
submission cannot redefine ``abs`` or ``tuple`` for the test, as it could where the check
shares its globals). Like ``check``, a judge that stops at the first failure never calls
the candidate for the asserts after it.
"""

from __future__ import annotations

import ast
from typing import Any

from .._pysource import parse_quietly
from ..judge import TestCase

_MAX_FOLDED = 100_000  # items or characters a folded constant may have


def _literal(node: ast.expr) -> tuple[bool, Any]:
    """``(True, value)`` for a constant expression, else ``(False, None)``."""
    try:
        return True, _fold(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, ArithmeticError):
        return False, None


_BINOPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY: dict[type, Any] = {
    ast.USub: lambda a: -a,
    ast.UAdd: lambda a: +a,
    ast.Not: lambda a: not a,
}
_NUMBER = (int, float, complex)


def _fold(node: ast.expr) -> Any:
    """The value of a constant expression: literals, and arithmetic on numbers, strings,
    lists and tuples. Raises ValueError for anything else or anything too large."""
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _fold(node.left), _fold(node.right)
        _check_operands(node.op, left, right)
        value = _BINOPS[type(node.op)](left, right)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = _fold(node.operand)
        if not isinstance(operand, _NUMBER):
            raise ValueError("unary operator on a non-number")
        value = _UNARY[type(node.op)](operand)
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = [_fold(e) for e in node.elts]
        value = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    elif isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking")
        value = {_fold(k): _fold(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    else:
        value = ast.literal_eval(node)
    if isinstance(value, str | bytes | list | tuple) and len(value) > _MAX_FOLDED:
        raise ValueError("constant too large")
    return value


def _check_operands(op: ast.operator, left: Any, right: Any) -> None:
    """Allow only operations whose cost and result size are small and obvious."""
    numbers = isinstance(left, _NUMBER) and isinstance(right, _NUMBER)
    if isinstance(op, ast.Pow):
        if not numbers or isinstance(right, complex) or abs(right) > 64:
            raise ValueError("power too large to fold")
        if isinstance(left, int) and left.bit_length() * abs(right) > 4096:
            raise ValueError("power too large to fold")
        return
    if numbers:
        if isinstance(left, int) and isinstance(right, int) and isinstance(op, ast.Mult):
            if left.bit_length() + right.bit_length() > 4096:
                raise ValueError("product too large to fold")
        return
    if (
        isinstance(op, ast.Add)
        and type(left) is type(right)
        and isinstance(left, str | list | tuple)
    ):
        return
    if isinstance(op, ast.Mult):
        seq, count = (left, right) if isinstance(right, int) else (right, left)
        if (
            isinstance(seq, str | list | tuple)
            and isinstance(count, int)
            and not isinstance(count, bool)
            and len(seq) * max(count, 0) <= _MAX_FOLDED
        ):
            return
    raise ValueError("operation not folded")


def check_to_calls(
    test_code: str, fn_name: str, candidate: str = "candidate"
) -> list[TestCase] | None:
    """Call tests equivalent to ``check(fn)`` in ``test_code``, or None if it is not simple."""
    try:
        tree = parse_quietly(test_code)
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
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant | ast.Name):
            continue  # a docstring, a bare string, a bare name (HumanEval/129's ``print``)
        if not isinstance(stmt, ast.Assert):
            return None
        # ``stmt.msg`` is ignored: it is evaluated only once the assertion has failed, so
        # whatever it does (HumanEval/77 calls the candidate again) the test has failed.
        ok, value = _literal(stmt.test)
        if ok:
            if value:
                continue  # ``assert True``: checks nothing
            return None
        parsed = _assertion(stmt.test, candidate)
        if parsed is None:
            return None
        args, options, expected = parsed
        tests.append(
            TestCase(
                kind="call",
                name=f"assert-{len(tests)}",
                options={"fn_name": fn_name, "args": args, **options},
                expected_value=expected,
            )
        )
    return tests or None


def _call_args(node: ast.expr, candidate: str) -> list[Any] | None:
    """The constant arguments of ``candidate(...)``, or None if ``node`` is not such a call."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == candidate
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
    ):
        return None
    args = [_literal(a) for a in node.args]
    if not all(ok for ok, _ in args):
        return None
    return [v for _, v in args]


def _tuple_of(node: ast.expr) -> ast.expr | None:
    """``X`` for ``tuple(X)``, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "tuple"
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
    ):
        return node.args[0]
    return None


def _assertion(test: ast.expr, candidate: str) -> tuple[list[Any], dict[str, Any], Any] | None:
    """``(args, options, expected)`` of a supported assertion, else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        args = _call_args(test.operand, candidate)
        return None if args is None else (args, {"python_op": "falsy"}, None)
    args = _call_args(test, candidate)
    if args is not None:
        return args, {"python_op": "truthy"}, None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, (right,) = test.left, test.comparators
    op = test.ops[0]
    if isinstance(op, ast.Eq | ast.Is):
        options: dict[str, Any] = {"python_op": "is" if isinstance(op, ast.Is) else "=="}
        inner, wanted = _tuple_of(left), _tuple_of(right)
        if inner is not None and wanted is not None and isinstance(op, ast.Eq):
            left, right = inner, wanted
            options["convert"] = "tuple"
        args = _call_args(left, candidate)
        ok, expected = _literal(right)
        if args is None or not ok:
            return None
        if options.get("convert") == "tuple":
            try:
                expected = tuple(expected)
            except TypeError:
                return None
        if options["python_op"] == "is" and expected not in (True, False, None):
            return None
        return args, options, expected
    if isinstance(op, ast.Lt | ast.LtE):
        # ``abs(candidate(...) - E) < TOL``
        if not (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "abs"
            and len(left.args) == 1
            and not left.keywords
            and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub)
        ):
            return None
        args = _call_args(left.args[0].left, candidate)
        ok_e, expected = _literal(left.args[0].right)
        ok_t, tol = _literal(right)
        if args is None or not (ok_e and ok_t):
            return None
        numeric = (int, float)
        if type(expected) not in numeric or type(tol) not in numeric:
            return None
        return (
            args,
            {"python_op": "abs<" if isinstance(op, ast.Lt) else "abs<=", "tol": tol},
            expected,
        )
    return None


def _calls_anything(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))
