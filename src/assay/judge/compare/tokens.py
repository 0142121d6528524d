"""Whitespace-separated tokens must match (the judges' default); optionally case-insensitive."""

from __future__ import annotations

from typing import Any


def compare(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    got, want = output.split(), expected.split()
    if options.get("case_insensitive"):
        got, want = [g.casefold() for g in got], [w.casefold() for w in want]
    if got == want:
        return True, ""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return False, f"token {i + 1}: expected {w[:60]!r}, got {g[:60]!r}"
    return False, f"expected {len(want)} tokens, got {len(got)}"
