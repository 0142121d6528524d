"""The step-reward formula and the diagnosis score, term by term."""

from __future__ import annotations

import pytest

from assay.errors import ValidationError
from assay.sessions.step_reward import (
    RewardWeights,
    check_diagnosis,
    diagnosis_score,
    step_reward,
)
from assay.tasks import parse_patch

ZERO = {k: 0.0 for k in RewardWeights().to_dict()}
FILES = {"m.py": b"def f():\n    return 1\n\n\ndef g():\n    return 2\n"}
PATCH = parse_patch("--- a/m.py\n+++ b/m.py\n@@ -2 +2 @@\n-    return 1\n+    return 3\n")


@pytest.mark.parametrize(
    ("term", "value", "expected"),
    [
        ("pass_delta", 0.5, 0.5),
        ("regression", 0.5, -0.25),
        ("protected", 1.0, -1.0),
        ("unparseable", 1.0, -0.25),
        ("diff_excess", 1.0, -0.1),
        ("diagnosis", 1.0, 0.2),
    ],
)
def test_each_term_with_its_default_weight(term: str, value: float, expected: float) -> None:
    assert step_reward({**ZERO, term: value}, RewardWeights()) == pytest.approx(expected)


def test_weights_are_configurable() -> None:
    w = RewardWeights(pass_delta=2.0, protected=0.0)
    assert step_reward({**ZERO, "pass_delta": 0.5, "protected": 1.0}, w) == 1.0


def test_diagnosis_levels() -> None:
    assert diagnosis_score({"lines": ["m.py:2"]}, PATCH, FILES) == 1.0
    assert diagnosis_score({"lines": ["m.py:1-2"]}, PATCH, FILES) == pytest.approx(2 / 3)
    assert diagnosis_score({"lines": {"m.py": [6]}}, PATCH, FILES) == 0.0
    assert diagnosis_score({"functions": ["m.py::f"]}, PATCH, FILES) == 1.0
    assert diagnosis_score({"functions": ["f", "g"]}, PATCH, FILES) == pytest.approx(2 / 3)
    assert diagnosis_score({"files": ["/work/m.py"], "functions": ["g"]}, PATCH, FILES) == 0.5
    assert diagnosis_score({"files": ["m.py"]}, None, FILES) == 0.0  # no reference patch
    assert diagnosis_score(None, PATCH, FILES) == 0.0


@pytest.mark.parametrize(
    ("diagnosis", "field"),
    [
        ("m.py:2", "diagnosis"),
        ({"why": 1}, "diagnosis.why"),
        ({"files": "m.py"}, "diagnosis.files"),
        ({"lines": ["m.py"]}, "diagnosis.lines"),
        ({"lines": {"m.py": ["2"]}}, "diagnosis.lines"),
        ({"lines": ["m.py:1-99999"]}, "diagnosis.lines"),
    ],
)
def test_bad_diagnoses_name_the_field(diagnosis: object, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        check_diagnosis(diagnosis)
    assert info.value.field == field


def test_a_file_nested_too_deeply_to_parse_names_no_function() -> None:
    """``ast.parse`` raises RecursionError (a long chain of operators) or MemoryError (deep
    unary operators), not a SyntaxError, on some files: such a file encloses no function."""
    from assay.sessions.step_reward import _functions

    files = {"a.py": b"x = 1" + b" + 1" * 200_000, "b.py": b"x = " + b"-" * 100_000 + b"1"}
    assert _functions(files, {"a.py": {1}, "b.py": {1}}) == set()
