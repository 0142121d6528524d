"""``--format assay``: Assay's own problem-suite format, a :class:`Problem` written out.

JSON Lines, one problem per line: ``{"format": "assay-suite/1", "id", "tests", "limits",
"checker", "references", "metadata"}`` and, when set, ``"image"`` and ``"network"``
(``"loopback"``: the tests' runs have ``lo`` up). Each test has the :class:`TestCase` fields; values
that JSON cannot carry exactly (tuples, sets, bytes, big ints, NaN) are written in the
tagged encoding of :mod:`assay.judge.values`: ``options.args`` (a list of tagged
arguments) and ``expected_value``. Sets are written in a fixed order, so the same problem
always gives the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase, values
from ..types import Limits

VERSION = "assay-suite/1"


def _canonical(tagged: Any) -> Any:
    if isinstance(tagged, list) and tagged and isinstance(tagged[0], str):
        tag = tagged[0]
        if tag in ("l", "t"):
            return [tag, [_canonical(v) for v in tagged[1]]]
        if tag in ("S", "F"):
            return [tag, sorted((_canonical(v) for v in tagged[1]), key=json.dumps)]
        if tag == "d":
            return ["d", [[_canonical(k), _canonical(v)] for k, v in tagged[1]]]
    return tagged


def encode_value(value: Any) -> Any:
    return _canonical(values.encode(values.plain(value)))


def dump_problem(problem: Problem) -> dict[str, Any]:
    tests = []
    for t in problem.tests:
        row: dict[str, Any] = {
            "kind": t.kind,
            "name": t.name,
            "weight": t.weight,
            "input": t.input,
            "expected": t.expected,
            "compare": t.compare,
            "code": t.code,
        }
        options = dict(t.options)
        if "args" in options:
            options["args"] = [encode_value(a) for a in options["args"]]
        row["options"] = options
        row["expected_value"] = encode_value(t.expected_value)
        tests.append(row)
    out = {
        "format": VERSION,
        "id": problem.id,
        "tests": tests,
        "limits": asdict(problem.limits),
        "checker": problem.checker,
        "references": list(problem.references),
        "metadata": problem.metadata,
    }
    if problem.image is not None:  # written only when set: older suites keep their bytes
        out["image"] = problem.image
    if problem.network != "none":
        out["network"] = problem.network
    return out


def dumps(problem: Problem) -> str:
    """One line of the suite file (deterministic: keys sorted, sets ordered)."""
    return json.dumps(dump_problem(problem), sort_keys=True)


def _decode(value: Any, field: str) -> Any:
    try:
        return values.decode(value)
    except values.BadValue as exc:
        raise ValidationError(field, f"not a tagged value: {exc}") from exc


def problem(rec: dict[str, Any], n: int = 0) -> Problem:
    where = f"problem {rec.get('id', n)!r}"
    if rec.get("format") != VERSION:
        raise ValidationError("format", f"{where}: expected {VERSION!r}, got {rec.get('format')!r}")
    if not isinstance(rec.get("tests"), list):
        raise ValidationError("tests", f"{where}: must be a list")
    tests = []
    known = {f.name for f in fields(TestCase)}
    for k, row in enumerate(rec["tests"]):
        if not isinstance(row, dict) or not set(row) <= known:
            raise ValidationError(f"tests[{k}]", f"{where}: unknown fields or not an object")
        row = dict(row)
        options = dict(row.get("options") or {})
        if "args" in options:
            options["args"] = [_decode(a, f"tests[{k}].options.args") for a in options["args"]]
        row["options"] = options
        row["expected_value"] = _decode(
            row.get("expected_value", ["n"]), f"tests[{k}].expected_value"
        )
        tests.append(TestCase(**row))
    try:
        limits = Limits(**(rec.get("limits") or {}))
    except TypeError as exc:
        raise ValidationError("limits", f"{where}: {exc}") from exc
    return Problem(
        str(rec.get("id", "")),
        tests,
        limits=limits,
        checker=rec.get("checker"),
        references=list(rec.get("references") or []),
        metadata=dict(rec.get("metadata") or {}),
        image=rec.get("image"),
        network=rec.get("network", "none"),
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r, n) for n, r in enumerate(records)]
