"""Kattis/CLICS packages (built in a temporary folder, in the format's shape)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import Runner, ValidationError, formats
from assay.judge import Judge, Submission

VALIDATOR = """
import sys
n = int(open(sys.argv[1]).read())
a, b = map(int, sys.stdin.read().split())
sys.exit(42 if a + b == n else 43)
"""


def _package(root: Path, name: str, yaml: str, validator: str | None = None) -> Path:
    pkg = root / name
    for group, cases in (
        ("sample", [("1", "4\n", "2 2\n")]),
        ("secret", [("a", "9\n", "4 5\n"), ("b", "2\n", "1 1\n")]),
    ):
        d = pkg / "data" / group
        d.mkdir(parents=True)
        for stem, inp, ans in cases:
            (d / f"{stem}.in").write_text(inp)
            (d / f"{stem}.ans").write_text(ans)
    (pkg / "problem.yaml").write_text(yaml)
    if validator:
        v = pkg / "output_validators" / "split"
        v.mkdir(parents=True)
        (v / "validate.py").write_text(validator)
    acc = pkg / "submissions" / "accepted"
    acc.mkdir(parents=True)
    (acc / "ok.py").write_text("n = int(input())\nprint(n // 2, n - n // 2)\n")
    (pkg / ".timelimit").write_text("1.5\n")
    return pkg


def test_default_validation_and_limits(tmp_path: Path, runner: Runner) -> None:
    (p,) = formats.load(
        _package(tmp_path, "half", "name: Half\nlimits:\n  memory: 256\n"), "kattis"
    )
    assert len(p.tests) == 3 and p.limits.time_s == 1.5 and p.limits.memory_mb == 256
    assert Judge(runner).judge(Submission(p, p.references[0])).verdict == "accepted"


def test_custom_output_validator(tmp_path: Path, runner: Runner) -> None:
    _package(tmp_path, "split", "name: Split\nvalidation: custom\n", VALIDATOR)
    _package(tmp_path, "half", "name: Half\n")
    problems = {p.id: p for p in formats.load(tmp_path, "kattis")}
    split = problems["split"]
    assert split.checker is not None and split.metadata["checker_style"] == "kattis"
    judge = Judge(runner)
    assert judge.judge(Submission(split, "n = int(input())\nprint(1, n - 1)")).verdict == "accepted"
    assert judge.judge(Submission(split, "print(1, 1)")).verdict == "wrong_answer"


def test_float_tolerance_flags(tmp_path: Path) -> None:
    (p,) = formats.load(
        _package(tmp_path, "f", "validator_flags: float_tolerance 1e-4\n"), "kattis"
    )
    assert p.tests[0].compare == "floats" and p.tests[0].options["abs_tol"] == 1e-4


def test_not_a_package(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as info:
        formats.load(tmp_path, "kattis")
    assert info.value.field == "dataset"
