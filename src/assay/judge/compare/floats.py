"""Tokens compared as numbers where the answer is a number: |got - want| <= max(abs_tol,
rel_tol * |want|). NaN and infinities only match themselves; non-numeric tokens must match
exactly. Defaults: abs_tol = rel_tol = 1e-6."""

from __future__ import annotations

import math
from typing import Any


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def compare(output: str, expected: str, options: dict[str, Any]) -> tuple[bool, str]:
    abs_tol = float(options.get("abs_tol", 1e-6))
    rel_tol = float(options.get("rel_tol", 1e-6))
    got, want = output.split(), expected.split()
    if len(got) != len(want):
        return False, f"expected {len(want)} tokens, got {len(got)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        wv = _number(w)
        if wv is None:
            if g != w:
                return False, f"token {i + 1}: expected {w[:60]!r}, got {g[:60]!r}"
            continue
        gv = _number(g)
        if gv is None:
            return False, f"token {i + 1}: expected a number near {w}, got {g[:60]!r}"
        if math.isnan(wv) or math.isinf(wv) or math.isnan(gv) or math.isinf(gv):
            same = (math.isnan(wv) and math.isnan(gv)) or wv == gv
            if not same:
                return False, f"token {i + 1}: expected {w}, got {g}"
            continue
        if abs(gv - wv) > max(abs_tol, rel_tol * abs(wv)):
            return (
                False,
                f"token {i + 1}: expected {w}, got {g} (tolerance {max(abs_tol, rel_tol * abs(wv)):g})",
            )
    return True, ""
