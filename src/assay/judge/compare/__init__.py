"""Output comparators: one small module each, one registry line each (DMOJ's layout).

A comparator gets the program's raw output and the expected answer, both as text, and
returns ``(ok, message)``; it runs in the trusted process, never in the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import ValidationError
from . import exact, floats, tokens

Comparator = Callable[[str, str, dict[str, Any]], tuple[bool, str]]

REGISTRY: dict[str, Comparator] = {
    "exact": exact.compare,
    "lines": exact.compare_lines,
    "tokens": tokens.compare,
    "floats": floats.compare,
}


def get(name: str) -> Comparator:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValidationError(
            "compare", f"unknown comparator {name!r}; known: {', '.join(sorted(REGISTRY))}"
        ) from None
