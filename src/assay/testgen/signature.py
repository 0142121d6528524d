"""What a task's text says about its inputs: parameters, type hints, docstring examples.

Only the task's own text is read (parsed, never run on the host): the entry point's
signature and annotations in the reference, the calls written in its prompt (``>>> f(1, 2)``,
``f("ab") ➞ True``), and ``isinstance`` checks in its contract.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import Any

from .._pysource import parse_quietly
from ..errors import ValidationError
from .types import T, from_annotation, from_isinstance, join, loosen, of_value


@dataclass(frozen=True, slots=True)
class Signature:
    entry: str
    params: tuple[str, ...]
    #: One type per parameter: from the annotation, else the contract, else the examples.
    types: tuple[T, ...]
    #: Argument lists of the calls written in the prompt (docstring examples).
    examples: tuple[tuple[Any, ...], ...]
    #: Source of ``_assay_contract(<params>)``: the contract's statements, then ``return
    #: True`` ("" when there is no contract).
    contract_source: str
    #: Values the prompt writes for single parameters (``grid : [[0, 1]]``), by position.
    hints: tuple[tuple[Any, ...], ...] = ()
    #: Line numbers of the statements of the reference's functions (for line coverage).
    statement_lines: frozenset[int] = frozenset()


def _parse(code: str, field: str) -> ast.Module:
    try:
        return parse_quietly(code)
    except SyntaxError as exc:
        raise ValidationError(field, f"does not parse: {exc}") from exc


def _function(tree: ast.Module, entry: str) -> ast.FunctionDef:
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == entry:
            return stmt
    for node in ast.walk(tree):  # e.g. a method, or a def under an if
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return node
    raise ValidationError("entry_point", f"no function {entry!r} in the reference")


def examples(prompt: str, entry: str, arity: int) -> list[tuple[Any, ...]]:
    """Argument tuples of every literal call ``entry(...)`` written in ``prompt``."""
    out: list[tuple[Any, ...]] = []
    for match in re.finditer(rf"(?<![\w.]){re.escape(entry)}\s*\(", prompt):
        start = match.end()  # just after the "("
        end = _balanced_end(prompt[start - 1 :])
        if end is None:
            continue
        text = prompt[start : start + end - 2]
        if prompt[match.start() - 4 : match.start()].endswith("def "):
            continue  # the definition itself
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                args = ast.literal_eval(f"({text},)") if text.strip() else ()
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(args, tuple) and len(args) == arity and args not in out:
            out.append(args)
    return out


def _literal_at(text: str) -> tuple[bool, Any]:
    """The Python literal ``text`` starts with (a bracketed or quoted one, or a number or
    name constant), if any."""
    text = text.lstrip()
    if not text:
        return False, None
    if text[0] in "[({\"'":
        end = _balanced_end(text)
        if end is None:
            return False, None
        chunk = text[:end]
    else:
        m = re.match(r"-?\d+(\.\d+)?(e-?\d+)?|True\b|False\b|None\b", text)
        if not m:
            return False, None
        chunk = m.group(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return True, ast.literal_eval(chunk)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _balanced_end(text: str) -> int | None:
    depth, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
                if depth == 0:
                    return i + 1
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def named_values(prompt: str, params: tuple[str, ...]) -> dict[str, list[Any]]:
    """Values written for each parameter: ``lst = [1, 2]``, ``grid : [[0, 1]]``,
    ``operator['+', '*']``, or ``Input: [4, 2, 3]`` for a one-parameter function."""
    found: dict[str, list[Any]] = {p: [] for p in params}
    for p in params:
        for m in re.finditer(rf"(?<![\w.]){re.escape(p)}\s*(?:[:=]\s*|(?=[\[{{\"']))", prompt):
            ok, value = _literal_at(prompt[m.end() :])
            if ok:
                found[p].append(value)
    if len(params) == 1 and not found[params[0]]:
        for m in re.finditer(r"(?i)\binput\s*:?\s*", prompt):
            ok, value = _literal_at(prompt[m.end() :])
            if ok:
                found[params[0]].append(value)
    return found


def _other_names(prompt: str, params: tuple[str, ...], t: T) -> list[Any]:
    """Values the prompt assigns to names that are not parameters (``array = [2, 3]`` where
    the parameter is ``operand``), of type ``t``'s kind: for a parameter nothing else names."""
    out = []
    for m in re.finditer(r"(?<![\w.])(\w+)\s*=\s*", prompt):
        if m.group(1) in params:
            continue
        ok, value = _literal_at(prompt[m.end() :])
        if ok and of_value(value).kind == t.kind:
            out.append(value)
    return out


def named_examples(
    prompt: str, params: tuple[str, ...], found: dict[str, list[Any]] | None = None
) -> list[tuple[Any, ...]]:
    """Examples written as values, where every parameter has one (see :func:`named_values`;
    ``found``: those values, already read)."""
    found = found if found is not None else named_values(prompt, params)
    n = min((len(v) for v in found.values()), default=0)
    return [tuple(found[p][k] for p in params) for k in range(n)]


def _contract_types(contract: str) -> dict[str, T]:
    found: dict[str, T] = {}
    for name, types in re.findall(r"isinstance\((\w+),\s*(\([^)]*\)|\w+)\)", contract):
        t = from_isinstance(types)
        if t is not None:
            found[name] = t
    for name, kind in re.findall(r"type\((\w+)\)\s*==\s*(\w+)", contract):
        t = from_isinstance(kind)
        if t is not None:
            found.setdefault(name, t)
    # all(isinstance(v, int) for v in xs), all(type(v) == str for v in xs): xs holds them
    for by_isinstance, by_type, name in re.findall(
        r"all\(\[?\s*(?:isinstance\(\w+,\s*(\([^)]*\)|\w+)\)|type\(\w+\)\s*==\s*(\w+))"
        r"[^\]\n]*?\s+for\s+\w+\s+in\s+(\w+)\s*\]?\)",
        contract,
    ):
        item = from_isinstance(by_isinstance or by_type)
        if item is not None and found.get(name, T("any")).kind in ("any", "list"):
            found[name] = T("list", (item,))
    return found


def contract_source(fn: ast.FunctionDef, contract: str) -> str:
    if not contract.strip():
        return ""
    body = "\n".join(
        "    " + line.strip() if not line.startswith("    ") else line
        for line in contract.strip("\n").splitlines()
    )
    args = ast.unparse(fn.args)
    return f"def _assay_contract({args}):\n{body}\n    return True\n"


def _statement_lines(tree: ast.Module) -> frozenset[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring runs no line
            for stmt in body:
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.stmt) and not isinstance(
                        sub, ast.FunctionDef | ast.ClassDef
                    ):
                        lines.add(sub.lineno)
    return frozenset(lines)


def _mixed(t: T) -> T:
    """Examples that mix three or more kinds of value (``['a', 3.14, 5]``) stand for "any
    value": booleans and None join the mix."""
    if t.kind == "union" and len(t.args) >= 3:
        extra = tuple(x for x in (T("bool"), T("none")) if x not in t.args)
        return T("union", t.args + extra)
    if t.args:
        return T(t.kind, tuple(_mixed(a) for a in t.args), t.variadic, t.loose)
    return t


def _vague(t: T) -> bool:
    return t.kind == "any" or any(_vague(a) for a in t.args)


def signature(prompt: str, reference: str, entry: str, contract: str = "") -> Signature:
    tree = _parse(reference, "reference")
    fn = _function(tree, entry)
    params = tuple(a.arg for a in fn.args.args)
    if fn.args.vararg or fn.args.kwonlyargs:
        raise ValidationError("entry_point", f"{entry}: only positional parameters are supported")
    by_contract = _contract_types(contract)
    named = named_values(prompt, params)
    seeds = examples(prompt, entry, len(params))
    bare = [p for p in params if not named[p]]
    if not seeds and len(params) > 1 and len(bare) == 1 and bare[0] in by_contract:
        # the prompt writes no call and names every parameter but one: its value may be
        # written under another name (HumanEval/160's ``array = [2, 3, 4, 5]``)
        named[bare[0]] = _other_names(prompt, params, by_contract[bare[0]])
    seeds = seeds or named_examples(prompt, params, named)
    types: list[T] = []
    for i, arg in enumerate(fn.args.args):
        t = from_annotation(arg.annotation) if arg.annotation is not None else None
        if t is None or t.kind == "any":
            t = by_contract.get(arg.arg, t)
        written = [s[i] for s in seeds] or named[arg.arg]
        if (t is None or _vague(t)) and written:
            inferred = t or T("any")
            for value in written:
                inferred = join(inferred, of_value(value))
            t = loosen(_mixed(inferred))
        types.append(t or T("any"))
    # Seeds typed by what the task says: an int written where a float is declared stays an
    # int (as the task wrote it).
    return Signature(
        entry,
        params,
        tuple(types),
        tuple(seeds),
        contract_source(fn, contract),
        tuple(tuple(named[p]) for p in params),
        _statement_lines(tree),
    )
