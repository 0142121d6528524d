"""HumanEval+ inputs as a hidden pytest file: each input with the canonical solution's answer
(computed in the sandbox by :func:`assay.formats.evalplus.with_expected`), compared as the
judge compares HumanEval+ answers (floats within ``atol``/``rtol``, types exact otherwise).

Values are written as Python source that compiles whatever their size: integers past
CPython's 4,300-digit literal limit are written in hex, NaN and infinities as ``float(...)``.
Base inputs are one test each (``test_base_000``); the many plus inputs are grouped, 25 to a
test (``test_plus_000``), so a verification names a few dozen tests, not a thousand.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from ..formats import evalplus
from ..judge import Problem
from ..judge._inside import codec
from ..runner import Runner

PLUS_GROUP = 25

#: The hidden file's comparison is the judge's own (:func:`assay.judge._inside.codec.equal`,
#: standard library only), written into the file: a repair task is verified as HumanEval+
#: submissions are judged.
_COMPARE = (
    "\n\n"
    + inspect.getsource(codec.equal)
    + """

def _check(cases, atol, rtol):
    for args, want in cases:
        got = candidate(*copy.deepcopy(args))
        assert equal(got, want, atol, rtol), f"{args!r:.200}: got {got!r:.200}, want {want!r:.200}"
"""
)


def source(value: Any) -> str:
    """Python source for a plain value (ints of any size, NaN, sets, nested containers)."""
    if value is None or isinstance(value, bool | str | bytes):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() < 10_000:
            return repr(value)
        sign = "-" if value < 0 else ""
        return f"{sign}int('{abs(value):x}', 16)"  # base 16 has no digit limit
    if isinstance(value, float):
        return f"float('{value}')" if math.isnan(value) or math.isinf(value) else repr(value)
    if isinstance(value, complex):
        return f"complex({source(value.real)}, {source(value.imag)})"
    if isinstance(value, list):
        return "[" + ", ".join(source(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(source(v) + ", " for v in value) + ")"
    if isinstance(value, set | frozenset):
        inner = ", ".join(sorted(source(v) for v in value))
        return f"{type(value).__name__}([{inner}])"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{source(k)}: {source(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"no source for a {type(value).__name__}")


def plus_file(rec: dict[str, Any], runner: Runner) -> str:
    """The hidden test file of HumanEval+ record ``rec`` (base and plus inputs)."""
    base = evalplus.with_expected(runner, evalplus.problem(rec, "base"))
    full = evalplus.with_expected(runner, evalplus.problem(rec, "plus"))
    return render(rec, base, full.tests[len(base.tests) :])


def render(rec: dict[str, Any], base: Problem, plus: list[Any]) -> str:
    atol = float(rec.get("atol") or 0) or 1e-6
    head = (
        f'"""Hidden tests of {rec["task_id"]} (evalplus/humanevalplus_release: base and plus '
        f'inputs, expected values from the canonical solution)."""\n\n'
        "from __future__ import annotations\n\nimport copy\nimport math\n\n"
        f"from solution import {rec['entry_point']} as candidate\n\nATOL, RTOL = {atol!r}, 1e-7\n"
    )
    parts = [head, _COMPARE]
    for i, t in enumerate(base.tests):
        case = f"({source(list(t.options['args']))}, {source(t.expected_value)})"
        parts.append(f"\n\ndef test_base_{i:03d}():\n    _check([{case}], ATOL, RTOL)\n")
    for g in range(0, len(plus), PLUS_GROUP):
        cases = ",\n        ".join(
            f"({source(list(t.options['args']))}, {source(t.expected_value)})"
            for t in plus[g : g + PLUS_GROUP]
        )
        name = f"test_plus_{g // PLUS_GROUP:03d}"
        parts.append(f"\n\ndef {name}():\n    _check([\n        {cases},\n    ], ATOL, RTOL)\n")
    return "".join(parts)


__all__ = ["PLUS_GROUP", "plus_file", "render", "source"]
