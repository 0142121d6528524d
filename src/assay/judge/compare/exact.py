"""Byte-for-byte equality (``exact``), and line-wise equality ignoring trailing spaces
and trailing blank lines (``lines``)."""

from __future__ import annotations

from typing import Any


def compare(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    if output == expected:
        return True, ""
    return False, _first_difference(output, expected)


def compare_lines(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    got = [line.rstrip() for line in output.rstrip().splitlines()]
    want = [line.rstrip() for line in expected.rstrip().splitlines()]
    if options.get("case_insensitive"):
        got, want = [g.casefold() for g in got], [w.casefold() for w in want]
    if got == want:
        return True, ""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return False, f"line {i + 1}: expected {w[:80]!r}, got {g[:80]!r}"
    return False, f"expected {len(want)} lines, got {len(got)}"


def _first_difference(output: str, expected: str) -> str:
    for i, (a, b) in enumerate(zip(output, expected, strict=False)):
        if a != b:
            return f"first difference at character {i}: expected {expected[i : i + 40]!r}, got {output[i : i + 40]!r}"
    return f"expected {len(expected)} characters, got {len(output)}"
