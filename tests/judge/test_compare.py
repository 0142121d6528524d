from __future__ import annotations

import pytest

from assay import ValidationError
from assay.judge import compare


@pytest.mark.parametrize(
    ("name", "output", "expected", "options", "ok"),
    [
        ("exact", "1 2\n", "1 2\n", {}, True),
        ("exact", "1 2", "1 2\n", {}, False),
        ("lines", "a  \nb\n\n", "a\nb", {}, True),
        ("lines", "A\n", "a\n", {"case_insensitive": True}, True),
        ("tokens", " 1\n 2  3\n", "1 2 3", {}, True),
        ("tokens", "1 2", "1 2 3", {}, False),
        ("tokens", "YES", "yes", {}, False),
        ("tokens", "YES", "yes", {"case_insensitive": True}, True),
        ("floats", "0.3333333", "0.333333333", {}, True),
        ("floats", "0.34", "0.333333333", {}, False),
        ("floats", "1e9", "1000000001", {"rel_tol": 1e-6}, True),
        ("floats", "nan", "1.0", {}, False),
        ("floats", "inf", "1e308", {}, False),
        ("floats", "nan", "nan", {}, True),
        ("floats", "abc 1.0", "abc 1.0000001", {}, True),
        ("floats", "1.0 2.0", "1.0", {}, False),
    ],
)
def test_comparators(
    name: str, output: str, expected: str, options: dict[str, float], ok: bool
) -> None:
    assert compare.get(name)(output, expected, options)[0] is ok


def test_unknown_comparator_names_field() -> None:
    with pytest.raises(ValidationError) as info:
        compare.get("fuzzy")
    assert info.value.field == "compare"
