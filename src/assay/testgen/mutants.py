"""AST mutants of a reference: the faults a test suite should notice.

Operators (``+``/``-``, ``*``/``//``...), comparisons (``<``/``<=``, ``==``/``!=``, ``in``),
boolean operators, constants (``k`` to ``k±1``, strings emptied, ``True``/``False``),
boundaries (``range``/slice bounds and subscripts shifted by one), negations dropped and
statements removed. Only the bodies of the reference's functions are mutated; each mutant
is the reference with exactly one change, written back with ``ast.unparse``.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Callable
from dataclasses import dataclass

from .._pysource import parse_quietly

_BINOPS: dict[type, list[type]] = {
    ast.Add: [ast.Sub],
    ast.Sub: [ast.Add],
    ast.Mult: [ast.FloorDiv, ast.Add],
    ast.Div: [ast.Mult, ast.FloorDiv],
    ast.FloorDiv: [ast.Div, ast.Mult],
    ast.Mod: [ast.FloorDiv],
    ast.Pow: [ast.Mult],
    ast.BitAnd: [ast.BitOr],
    ast.BitOr: [ast.BitAnd],
    ast.LShift: [ast.RShift],
    ast.RShift: [ast.LShift],
}


def _both_ways(*rules: tuple[tuple[type, type], ...]) -> dict[type, list[type]]:
    """Each operator's replacements, from rules of pairs that replace each other."""
    out: dict[type, list[type]] = {}
    for rule in rules:
        for a, b in rule:
            out.setdefault(a, []).append(b)
            out.setdefault(b, []).append(a)
    return out


#: A comparison's mutants: its boundary moved (``<`` and ``<=``), its direction reversed
#: (``<`` and ``>``), its test negated (``==`` and ``!=``, ``in``, ``is``).
_CMPOPS = _both_ways(
    ((ast.Lt, ast.LtE), (ast.Gt, ast.GtE)),
    ((ast.Lt, ast.Gt), (ast.LtE, ast.GtE)),
    ((ast.Eq, ast.NotEq), (ast.In, ast.NotIn), (ast.Is, ast.IsNot)),
)


@dataclass(frozen=True, slots=True)
class Mutant:
    source: str
    operator: str  # e.g. "binop Add->Sub", "remove Assign"
    line: int


def _shift(node: ast.expr, by: int) -> ast.expr:
    return ast.BinOp(left=node, op=ast.Add() if by > 0 else ast.Sub(), right=ast.Constant(1))


Edit = Callable[[ast.AST], str]  # applies one change in place, returns its name


def _edits(node: ast.AST) -> list[Edit]:
    """The single-point changes that can be made at ``node``."""
    out: list[Edit] = []
    if isinstance(node, ast.BinOp | ast.AugAssign):
        for new in _BINOPS.get(type(node.op), []):

            def swap(n: ast.AST, new: type = new) -> str:
                old = type(n.op).__name__  # type: ignore[attr-defined]
                n.op = new()  # type: ignore[attr-defined]
                return f"binop {old}->{new.__name__}"

            out.append(swap)
    elif isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            for new in _CMPOPS.get(type(op), []):

                def cmp(n: ast.AST, k: int = k, new: type = new) -> str:
                    old = type(n.ops[k]).__name__  # type: ignore[attr-defined]
                    n.ops[k] = new()  # type: ignore[attr-defined]
                    return f"compare {old}->{new.__name__}"

                out.append(cmp)
    elif isinstance(node, ast.BoolOp):

        def boolop(n: ast.AST) -> str:
            n.op = ast.Or() if isinstance(n.op, ast.And) else ast.And()  # type: ignore[attr-defined]
            return "boolop"

        out.append(boolop)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):

        def unary(n: ast.AST) -> str:
            n.op = ast.UAdd()  # type: ignore[attr-defined]
            return "drop unary"

        if isinstance(node.op, ast.USub):
            out.append(unary)
    elif isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):

            def flip(n: ast.AST) -> str:
                n.value = not n.value  # type: ignore[attr-defined]
                return "constant bool"

            out.append(flip)
        elif isinstance(v, int | float):
            for by in (1, -1):

                def num(n: ast.AST, by: int = by) -> str:
                    n.value = n.value + by  # type: ignore[attr-defined]
                    return f"constant {by:+d}"

                out.append(num)
        elif isinstance(v, str):

            def text(n: ast.AST) -> str:
                n.value = "" if n.value else "x"  # type: ignore[attr-defined]
                return "constant str"

            out.append(text)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "range" and node.args:
            for by in (1, -1):

                def rng(n: ast.AST, by: int = by) -> str:
                    args = n.args  # type: ignore[attr-defined]
                    k = 1 if len(args) > 1 else 0
                    args[k] = _shift(args[k], by)
                    return f"boundary range {by:+d}"

                out.append(rng)
    elif isinstance(node, ast.Slice):
        for part in ("lower", "upper"):
            if getattr(node, part) is not None:

                def sl(n: ast.AST, part: str = part) -> str:
                    setattr(n, part, _shift(getattr(n, part), 1))
                    return f"boundary slice {part}"

                out.append(sl)
    elif isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice | ast.Tuple):
        if isinstance(node.ctx, ast.Load):

            def sub(n: ast.AST) -> str:
                n.slice = _shift(n.slice, 1)  # type: ignore[attr-defined]
                return "boundary index"

            out.append(sub)
    return out


def _statement_lists(fn: ast.AST) -> list[tuple[list[ast.stmt], int]]:
    out = []
    for node in ast.walk(fn):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                for k, stmt in enumerate(stmts):
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                        continue  # docstrings
                    if not isinstance(
                        stmt, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom
                    ):
                        out.append((stmts, k))
    return out


def mutants(
    reference: str, seed: int = 0, limit: int = 60, whole_module: bool = False
) -> list[Mutant]:
    """Distinct single-change mutants of ``reference`` (at most ``limit``, a seeded sample
    when there are more), in a fixed order. ``whole_module``: mutate the module's top-level
    code too (a stdin script), not only its functions' bodies."""
    tree = parse_quietly(reference)
    original = ast.unparse(tree)
    functions: list[ast.AST] = (
        [tree]
        if whole_module
        else [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    )
    sites: list[tuple[str, int, int]] = []  # (kind, node index, edit index or stmt index)
    nodes: list[ast.AST] = []
    for fn in functions:
        for node in ast.walk(fn):
            if node is fn:
                continue
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _is_docstring(fn, node)
            ):
                continue
            for e in range(len(_edits(node))):
                sites.append(("edit", len(nodes), e))
            nodes.append(node)
    lists = [pair for fn in functions for pair in _statement_lists(fn)]
    sites += [("remove", k, 0) for k in range(len(lists))]
    out: list[Mutant] = []
    seen = {original}
    order = list(range(len(sites)))
    random.Random(seed).shuffle(order)
    for s in order:
        kind, k, e = sites[s]
        tree_copy = copy.deepcopy(tree)
        if kind == "edit":
            target = _nth(tree_copy, nodes, k, tree)
            name = _edits(target)[e](target)
            line = getattr(target, "lineno", 0)
        else:
            stmts, idx = _statement_lists_in(tree_copy, tree, lists, k)
            line = stmts[idx].lineno
            name = f"remove {type(stmts[idx]).__name__}"
            stmts[idx] = ast.Pass()
        try:
            source = ast.unparse(ast.fix_missing_locations(tree_copy))
            compile(source, "<mutant>", "exec")
        except (SyntaxError, ValueError, TypeError, RecursionError):
            continue
        if source in seen:
            continue
        seen.add(source)
        out.append(Mutant(source, name, line))
        if len(out) >= limit:
            break
    out.sort(key=lambda m: (m.line, m.operator, m.source))
    return out


def _is_docstring(fn: ast.AST, node: ast.Constant) -> bool:
    body = getattr(fn, "body", [])
    return bool(body) and isinstance(body[0], ast.Expr) and body[0].value is node


def _index(tree: ast.AST) -> dict[int, ast.AST]:
    return dict(enumerate(ast.walk(tree)))


def _nth(copy_tree: ast.AST, nodes: list[ast.AST], k: int, tree: ast.AST) -> ast.AST:
    """The node in ``copy_tree`` at the place ``nodes[k]`` has in ``tree``."""
    position = {id(n): i for i, n in enumerate(ast.walk(tree))}[id(nodes[k])]
    return _index(copy_tree)[position]


def _statement_lists_in(
    copy_tree: ast.AST, tree: ast.AST, lists: list[tuple[list[ast.stmt], int]], k: int
) -> tuple[list[ast.stmt], int]:
    stmts, idx = lists[k]
    position = {id(n): i for i, n in enumerate(ast.walk(tree))}[id(stmts[idx])]
    target = _index(copy_tree)[position]
    for node in ast.walk(copy_tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list):
                for j, stmt in enumerate(body):
                    if stmt is target:
                        return body, j
    raise AssertionError("statement not found in the copy")
