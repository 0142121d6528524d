"""CodeContests (deepmind/code_contests): stdio tests from the public, private and generated
sets; the problem's time and memory limits; Python 3 reference solutions."""

from __future__ import annotations

from typing import Any

from ..judge import Problem, TestCase
from ..types import Limits

PYTHON3 = 3  # the dataset's language code for Python 3
SETS = ("public_tests", "private_tests", "generated_tests")


def _limits(rec: dict[str, Any]) -> Limits:
    tl = rec.get("time_limit") or {}
    seconds = float(tl.get("seconds") or 0) + float(tl.get("nanos") or 0) / 1e9
    memory = int(rec.get("memory_limit_bytes") or 0) >> 20
    return Limits(
        time_s=seconds if seconds > 0 else 2.0, memory_mb=max(64, memory) if memory else 512
    )


def problem(rec: dict[str, Any]) -> Problem:
    tests = []
    for which in SETS:
        group = rec.get(which) or {}
        for i, (inp, out) in enumerate(
            zip(group.get("input", []), group.get("output", []), strict=False)
        ):
            tests.append(TestCase(kind="stdio", name=f"{which}-{i}", input=inp, expected=out))
    sols = rec.get("solutions") or {}
    refs = [
        s
        for lang, s in zip(sols.get("language", []), sols.get("solution", []), strict=False)
        if lang == PYTHON3
    ]
    return Problem(
        str(rec.get("name", "")),
        tests,
        limits=_limits(rec),
        references=refs,
        metadata={"prompt": rec.get("description", "")},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
