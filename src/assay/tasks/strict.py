"""Strict equality in hidden tests: ``assert got == expected`` that a lying ``__eq__`` cannot
pass.

A task with ``strict_values`` has every ``==`` / ``!=`` inside an ``assert`` of its hidden
tests rewritten (on the trusted side, before the tests are shipped) to a call of
``_assay_eq``, appended to the file. Where one side is a plain builtin value (int, float,
complex, str, bytes, bool, None, and lists, tuples, dicts, sets of those, exact types, not
subclasses), the other must be one too (or a numpy scalar of an exact numpy type) before
``==`` is asked: an object whose ``__eq__`` always says yes, a ``str`` subclass, or a proxy
fails. Comparisons between two objects of the code under test's own classes are left as
they are (their ``__eq__`` is part of what is tested). Fit for function-level tasks (the
CodeT repair tasks set it); off by default, as a repository's tests may legitimately
compare its own container subclasses with literals.
"""

from __future__ import annotations

import ast

from .._pysource import parse_quietly

HELPER = '''


def _assay_eq(a, b, _depth=0):
    """Strict ``a == b`` (added by Assay: see assay.tasks.strict)."""
    import sys as _sys

    plain = (int, float, complex, str, bytes, bool, type(None), list, tuple, dict, set, frozenset)

    def exact(x, depth):
        t = type(x)
        if depth > 50:
            return False
        np = _sys.modules.get("numpy")
        if np is not None and t in set(np.sctypeDict.values()):
            return True
        if t not in plain:
            return False
        if t in (list, tuple, set, frozenset):
            return all(exact(v, depth + 1) for v in x)
        if t is dict:
            return all(exact(k, depth + 1) and exact(v, depth + 1) for k, v in x.items())
        return True

    ea, eb = exact(a, 0), exact(b, 0)
    if ea != eb:
        return False
    return bool(a == b)
'''


class _Rewrite(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        node.test = _Compare().visit(node.test)
        return node


class _Compare(ast.NodeTransformer):
    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            return node
        call = ast.Call(
            func=ast.Name("_assay_eq", ast.Load()),
            args=[node.left, node.comparators[0]],
            keywords=[],
        )
        if isinstance(node.ops[0], ast.NotEq):
            return ast.UnaryOp(ast.Not(), call)
        return call


def strict_source(text: str) -> str:
    """``text`` with every ``==`` / ``!=`` in an assert made strict (unchanged if it does not
    parse: it then fails as written)."""
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError):
        return text
    tree = ast.fix_missing_locations(_Rewrite().visit(tree))
    return ast.unparse(tree) + "\n" + HELPER


__all__ = ["HELPER", "strict_source"]
