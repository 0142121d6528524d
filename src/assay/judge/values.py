"""Plain values across the sandbox boundary: the trusted side of the value codec.

Results of function calls come back as *data*, decoded here into builtin types only, so no
object the submission made (a lying ``__eq__``, a ``str`` subclass, a proxy that reads the
caller's frame) ever reaches the comparison. The same encoding carries arguments in. The
tags and the strict decoder are :mod:`assay.judge._inside.codec`, the module the sandbox
side ships, so both ends read one table; here the tags that name no plain value become
inert records: ``g`` an :class:`Iterated`, ``o`` an :class:`Opaque` (``T``, a type, is
refused: no test expects one back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ._inside import codec

MAX_DEPTH = codec.MAX_DEPTH
MAX_ITEMS = codec.MAX_ITEMS

#: The other side sent something that is not a well-formed plain value.
BadValue = codec.Malformed


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
    return codec.rebuild(value.type_name, value.items)


#: Values that hold nothing: most of what is compared, seen without an isinstance chain.
_ATOMS = frozenset({int, float, str, bool, bytes, type(None), complex})


def _holds_iterated(value: Any) -> bool:
    """Whether an :class:`Iterated` is anywhere in ``value`` (a walk that builds nothing)."""
    if type(value) in _ATOMS:
        return False
    if isinstance(value, Iterated):
        return True
    if isinstance(value, list | tuple | set | frozenset):
        for v in value:
            if type(v) not in _ATOMS and _holds_iterated(v):
                return True
        return False
    if isinstance(value, dict):
        for v in value.values():
            if type(v) not in _ATOMS and _holds_iterated(v):
                return True
    return False


def plain(value: Any) -> Any:
    """``value`` with every :class:`Iterated` (at any depth) replaced by its list of items:
    ``value`` itself when it holds none (read, never changed, by its callers), so that
    comparing a large answer does not copy it and its expected value each time."""
    if not _holds_iterated(value):
        return value
    return _rebuilt(value)


def _rebuilt(value: Any) -> Any:
    if isinstance(value, Iterated):
        return [_rebuilt(v) for v in value.items]
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(_rebuilt(v) for v in value)
    if isinstance(value, dict):
        return {k: _rebuilt(v) for k, v in value.items()}
    return value


def encode(value: Any) -> Any:
    """Encode a plain value (raises ValidationError for anything else)."""
    try:
        return codec.encode(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError("args", f"{exc}") from None


def decode(data: Any) -> Any:
    """Decode strictly into builtin types (plus :class:`Iterated` and :class:`Opaque`);
    raises :data:`BadValue` on anything malformed."""
    return codec.decode(data, _special)


def _special(tag: str, data: list[Any], depth: int) -> Any:
    if tag == "g":
        name = codec.exact(data[1], str)
        items = codec.items(data[3], _special, depth)
        if name == "dict_items" and not all(type(i) is tuple and len(i) == 2 for i in items):
            raise BadValue("malformed dict_items")
        if name == "range" and not all(type(i) is int for i in items):
            raise BadValue("malformed range")
        return Iterated(name, codec.exact(data[2], bool), items)
    if tag == "o":
        return Opaque(codec.exact(data[3], str), codec.exact(data[2], bool))
    raise BadValue(f"unknown tag {tag!r}")


def equal(got: Any, want: Any, atol: float = 0.0, rtol: float = 0.0) -> bool:
    """Python's ``==`` on plain values (the codec's ``equal``), as the dataset's own
    ``assert f(x) == want`` decides it: ``240.0 == 240`` and ``0 == False`` hold, ``[1] !=
    (1,)``; floats within tolerance; NaN equals NaN only where the expected value is NaN. An
    :class:`Iterated` counts as the list of its items; an expected :class:`Opaque` matches
    any answer but None."""
    return codec.equal(plain(got), plain(want), atol, rtol, Opaque)


def tuples_to_lists(value: Any) -> Any:
    """Tuples (at any depth) as lists: JSON datasets cannot tell them apart."""
    value = plain(value)
    if isinstance(value, tuple | list):
        return [tuples_to_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: tuples_to_lists(v) for k, v in value.items()}
    return value
