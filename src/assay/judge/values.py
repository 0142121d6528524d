"""Plain values across the sandbox boundary: a tagged JSON encoding and a strict decoder.

Results of function calls come back as *data*, decoded here into builtin types only, so no
object the submission made (a lying ``__eq__``, a ``str`` subclass, a proxy that reads the
caller's frame) ever reaches the comparison. The same encoding carries arguments in.

Tags: ``n`` None, ``b`` bool, ``i`` int (hexadecimal, so no digit limit applies), ``f`` float (repr), ``c``
complex, ``s`` str, ``y`` bytes (latin-1), ``l`` list, ``t`` tuple, ``S`` set, ``F``
frozenset, ``d`` dict (pairs), ``g`` a builtin iterator, generator, range or dict view that
the program returned (type name, truth value, items).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError

MAX_DEPTH = 100
MAX_ITEMS = 1_000_000


@dataclass(frozen=True, slots=True)
class Opaque:
    """A non-plain object the program returned (e.g. an ``re.Match``): only its type name
    and truth value crossed the boundary. As an *expected* value it means "anything not
    None" (EvalPlus's rule for such tasks); a program's opaque answer never equals a plain
    expected value."""

    type_name: str
    truthy: bool


@dataclass(frozen=True, slots=True)
class Iterated:
    """A generator, builtin iterator, ``range`` or dict view the program returned, with the
    items it produced. Plain comparisons (:func:`equal`) take it as the list of its items;
    a test's own Python assertion sees the equivalent builtin object (:func:`as_python`), so
    ``gen == []`` is False there, as in the test run as a script."""

    type_name: str
    truthy: bool
    items: list[Any]


def as_python(value: Any) -> Any:
    """The builtin object an :class:`Iterated` stands for (an iterator over its items, or an
    equal ``range`` / dict view); any other value unchanged."""
    if not isinstance(value, Iterated):
        return value
    items = value.items
    if value.type_name == "range":
        if not items:
            return range(0)
        step = items[1] - items[0] if len(items) > 1 else 1
        return range(items[0], items[-1] + step, step)
    if value.type_name == "dict_keys":
        return dict.fromkeys(items).keys()
    if value.type_name == "dict_values":
        return dict(enumerate(items)).values()
    if value.type_name == "dict_items":
        return dict(items).items()
    return iter(items)


def plain(value: Any) -> Any:
    """``value`` with every :class:`Iterated` (at any depth) replaced by its list of items."""
    if isinstance(value, Iterated):
        return [plain(v) for v in value.items]
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class BadValue(ValueError):
    """The other side sent something that is not a well-formed plain value."""


def encode(value: Any, depth: int = 0) -> Any:
    """Encode a plain value (raises ValidationError for anything else)."""
    if depth > MAX_DEPTH:
        raise ValidationError("args", "value nested too deeply")
    t = type(value)
    if value is None:
        return ["n"]
    if t is bool:
        return ["b", value]
    if t is int:
        return ["i", format(value, "x")]
    if t is float:
        return ["f", repr(value)]
    if t is complex:
        return ["c", repr(value.real), repr(value.imag)]
    if t is str:
        return ["s", value]
    if t is bytes:
        return ["y", value.decode("latin-1")]
    if t in (list, tuple, set, frozenset):
        tags: dict[type, str] = {list: "l", tuple: "t", set: "S", frozenset: "F"}
        tag = tags[t]
        return [tag, [encode(v, depth + 1) for v in value]]
    if t is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    raise ValidationError(
        "args", f"cannot pass a {t.__name__} into the sandbox (plain values only)"
    )


def decode(data: Any, depth: int = 0) -> Any:
    """Decode strictly into builtin types; raises BadValue on anything malformed."""
    if depth > MAX_DEPTH:
        raise BadValue("nested too deeply")
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise BadValue("not a tagged value")
    tag = data[0]
    try:
        if tag == "n":
            return None
        if tag == "b":
            return bool(_exact(data[1], bool))
        if tag == "i":
            return int(_exact(data[1], str), 16)
        if tag == "f":
            return float(_exact(data[1], str))
        if tag == "c":
            return complex(float(_exact(data[1], str)), float(_exact(data[2], str)))
        if tag == "s":
            return str(_exact(data[1], str))
        if tag == "y":
            return _exact(data[1], str).encode("latin-1")
        if tag in ("l", "t", "S", "F"):
            items = _exact(data[1], list)
            if len(items) > MAX_ITEMS:
                raise BadValue("too many items")
            values = [decode(v, depth + 1) for v in items]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](values)
        if tag == "g":
            items = _exact(data[3], list)
            if len(items) > MAX_ITEMS:
                raise BadValue("too many items")
            name = _exact(data[1], str)
            decoded = [decode(v, depth + 1) for v in items]
            if name == "dict_items" and not all(type(i) is tuple and len(i) == 2 for i in decoded):
                raise BadValue("malformed dict_items")
            if name == "range" and not all(type(i) is int for i in decoded):
                raise BadValue("malformed range")
            return Iterated(name, bool(_exact(data[2], bool)), decoded)
        if tag == "d":
            pairs = _exact(data[1], list)
            if len(pairs) > MAX_ITEMS:
                raise BadValue("too many items")
            out = {}
            for pair in pairs:
                k, v = _exact(pair, list)
                out[decode(k, depth + 1)] = decode(v, depth + 1)
            return out
    except (IndexError, TypeError, ValueError) as exc:
        raise BadValue(f"malformed {tag!r} value: {exc}") from exc
    if tag == "o":
        try:
            return Opaque(_exact(data[3], str), _exact(data[2], bool))
        except IndexError as exc:
            raise BadValue("malformed handle") from exc
    raise BadValue(f"unknown tag {tag!r}")


def _exact(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise BadValue(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def equal(got: Any, want: Any, atol: float = 0.0, rtol: float = 0.0) -> bool:
    """Structural equality of plain values; floats within tolerance; NaN equals NaN only
    where the expected value is NaN. Types must match (1 != True, [1] != (1,)), except that
    an int answer may match an expected float within tolerance."""
    if isinstance(want, Opaque):
        return got is not None
    got, want = plain(got), plain(want)
    if isinstance(want, float) and type(got) in (int, float) and not isinstance(got, bool):
        g = float(got)
        if math.isnan(want) or math.isnan(g):
            return math.isnan(want) and math.isnan(g)
        if math.isinf(want) or math.isinf(g):
            return want == g
        return abs(g - want) <= max(atol, rtol * abs(want)) if (atol or rtol) else g == want
    if type(got) is not type(want):
        return False
    if isinstance(want, list | tuple):
        return len(got) == len(want) and all(
            equal(g, w, atol, rtol) for g, w in zip(got, want, strict=True)
        )
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(equal(got[k], want[k], atol, rtol) for k in want)
    if isinstance(want, complex):
        return equal(got.real, want.real, atol, rtol) and equal(got.imag, want.imag, atol, rtol)
    return bool(got == want)


def tuples_to_lists(value: Any) -> Any:
    """Tuples (at any depth) as lists: JSON datasets cannot tell them apart."""
    value = plain(value)
    if isinstance(value, tuple | list):
        return [tuples_to_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: tuples_to_lists(v) for k, v in value.items()}
    return value
