"""Whitespace-separated tokens must match (the judges' default); optionally case-insensitive."""

from __future__ import annotations

from typing import Any

from ._common import match_items


def compare(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    return match_items(output.split(), expected.split(), "token", options)
