"""A small model of argument types, read from annotations, contracts and example values."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

KINDS = ("int", "float", "str", "bool", "none", "list", "tuple", "dict", "set", "union", "any")


@dataclass(frozen=True, slots=True)
class T:
    """``kind`` and its parameters: ``list`` (item), ``tuple`` (items; one item and
    ``variadic`` for ``Tuple[X, ...]``), ``dict`` (key, value), ``set`` (item), ``union``
    (alternatives)."""

    kind: str
    args: tuple[T, ...] = ()
    variadic: bool = False
    #: Read from example values only (nothing declares it): an int there may also be tried
    #: as the same number written as a float.
    loose: bool = False

    def __str__(self) -> str:
        if not self.args:
            return self.kind
        inner = ", ".join(map(str, self.args)) + (", ..." if self.variadic else "")
        return f"{self.kind}[{inner}]"


ANY = T("any")
_NAMES = {
    "int": "int",
    "float": "float",
    "str": "str",
    "bool": "bool",
    "None": "none",
    "list": "list",
    "List": "list",
    "tuple": "tuple",
    "Tuple": "tuple",
    "dict": "dict",
    "Dict": "dict",
    "set": "set",
    "Set": "set",
    "Any": "any",
}


def from_annotation(node: ast.expr | None) -> T | None:
    """The type an annotation names; None for one this model cannot express."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and node.value is None:
        return T("none")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return from_annotation(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(node, ast.Name | ast.Attribute):
        name = node.id if isinstance(node, ast.Name) else node.attr
        kind = _NAMES.get(name)
        if kind in ("list", "set"):
            return T(kind, (ANY,))
        if kind == "tuple":
            return T("tuple", (ANY,), variadic=True)
        if kind == "dict":
            return T("dict", (ANY, ANY))
        return T(kind) if kind else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = from_annotation(node.left), from_annotation(node.right)
        return T("union", (left, right)) if left and right else None
    if isinstance(node, ast.Subscript):
        base = (
            node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        )
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Optional":
            inner = from_annotation(items[0])
            return T("union", (inner, T("none"))) if inner else None
        if base == "Union":
            alts = [from_annotation(i) for i in items]
            return T("union", tuple(a for a in alts if a)) if all(alts) else None
        kind = _NAMES.get(base)
        if kind in ("tuple",) and len(items) == 2 and isinstance(items[1], ast.Constant):
            inner = from_annotation(items[0])
            return T("tuple", (inner,), variadic=True) if inner else None
        parsed = [from_annotation(i) or ANY for i in items]
        if kind in ("list", "set"):
            return T(kind, (parsed[0],))
        if kind == "dict" and len(parsed) == 2:
            return T("dict", tuple(parsed))
        if kind == "tuple":
            return T("tuple", tuple(parsed))
    return None


def from_isinstance(text: str) -> T | None:
    """The type of an ``isinstance(x, <text>)`` check: ``int``, ``(int, float)``..."""
    names = [n.strip() for n in text.strip("()").split(",") if n.strip()]
    alts = [from_annotation(ast.Name(n)) for n in names]
    known = [a for a in alts if a is not None]
    if not known:
        return None
    if len(known) == 1:
        return known[0]
    if {a.kind for a in known} == {"int", "float"}:
        return T("float")  # a number: floats and ints both
    return T("union", tuple(known))


def of_value(value: Any) -> T:
    """The type of an example value (lists typed by the join of their items)."""
    if value is None:
        return T("none")
    for kind in ("bool", "int", "float", "str"):
        if type(value).__name__ == kind:
            return T(kind)
    if isinstance(value, list | set):
        item = _join_all([of_value(v) for v in value])
        return T("list" if isinstance(value, list) else "set", (item,))
    if isinstance(value, tuple):
        return T("tuple", tuple(of_value(v) for v in value))
    if isinstance(value, dict):
        return T(
            "dict",
            (
                _join_all([of_value(k) for k in value]),
                _join_all([of_value(v) for v in value.values()]),
            ),
        )
    return ANY


def _join_all(types: list[T]) -> T:
    if not types:
        return ANY
    out = types[0]
    for t in types[1:]:
        out = join(out, t)
    return out


def join(a: T, b: T) -> T:
    """The least type covering both (roughly): int and float join as float."""
    if a == b:
        return a
    if a.kind == "any":
        return b
    if b.kind == "any":
        return a
    if {a.kind, b.kind} == {"int", "float"}:
        return T("float")
    if a.kind == b.kind and a.kind in ("list", "set", "dict") and len(a.args) == len(b.args):
        return T(a.kind, tuple(join(x, y) for x, y in zip(a.args, b.args, strict=True)))
    if a.kind == b.kind == "tuple" and len(a.args) == len(b.args):
        return T("tuple", tuple(join(x, y) for x, y in zip(a.args, b.args, strict=True)))
    alts = [*(a.args if a.kind == "union" else (a,)), *(b.args if b.kind == "union" else (b,))]
    unique: list[T] = []
    for t in alts:
        if t not in unique:
            unique.append(t)
    return T("union", tuple(unique))


def loosen(t: T) -> T:
    """``t`` with every int marked :attr:`T.loose`."""
    if t.kind == "int":
        return T("int", loose=True)
    if t.args:
        return T(t.kind, tuple(loosen(a) for a in t.args), t.variadic)
    return t
