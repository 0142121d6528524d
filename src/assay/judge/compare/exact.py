"""Byte-for-byte equality (``exact``), and line-wise equality ignoring trailing spaces
and trailing blank lines (``lines``)."""

from __future__ import annotations

from typing import Any

from ._common import match_items


def compare(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    if output == expected:
        return True, ""
    return False, _first_difference(output, expected)


def compare_lines(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    got = [line.rstrip() for line in output.rstrip().splitlines()]
    want = [line.rstrip() for line in expected.rstrip().splitlines()]
    return match_items(got, want, "line", options)


def _first_difference(output: str, expected: str) -> str:
    for i, (a, b) in enumerate(zip(output, expected, strict=False)):
        if a != b:
            return f"first difference at character {i}: expected {expected[i : i + 40]!r}, got {output[i : i + 40]!r}"
    return f"expected {len(expected)} characters, got {len(output)}"
