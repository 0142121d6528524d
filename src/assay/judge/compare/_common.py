"""Pieces shared by comparators."""

from __future__ import annotations

from typing import Any


def match_items(
    got: list[str], want: list[str], unit: str, options: dict[str, Any]
) -> tuple[bool, str]:
    """Compare two sequences (tokens or lines), optionally case-insensitively, and name the
    first difference."""
    if options.get("case_insensitive"):
        got, want = [g.casefold() for g in got], [w.casefold() for w in want]
    if got == want:
        return True, ""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return False, f"{unit} {i + 1}: expected {w[:80]!r}, got {g[:80]!r}"
    return False, f"expected {len(want)} {unit}s, got {len(got)}"
