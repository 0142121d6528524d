"""Assert-style checks turned into call tests: which lines convert, and to what."""

from __future__ import annotations

import pytest

from assay.formats._asserts import check_to_calls


def _convert(*lines: str) -> list[tuple[list[object], dict[str, object], object]] | None:
    body = "".join(f"    {line}\n" for line in lines)
    tests = check_to_calls(f"METADATA = {{}}\n\ndef check(candidate):\n{body}", "f")
    if tests is None:
        return None
    out = []
    for t in tests:
        options = {k: v for k, v in t.options.items() if k not in ("fn_name", "args")}
        assert t.options["fn_name"] == "f"
        out.append((t.options["args"], options, t.expected_value))
    return out


def test_plain_equality_and_identity() -> None:
    assert _convert("assert candidate(1, [2]) == 3", "assert candidate('') is None") == [
        ([1, [2]], {"python_op": "=="}, 3),
        ([""], {"python_op": "is"}, None),
    ]


def test_constant_arithmetic_is_folded() -> None:
    # HumanEval/8, /16, /31, /4
    assert _convert(
        "assert candidate([3, 5, 7]) == (3 + 5 + 7, 3 * 5 * 7)",
        "assert candidate('abcde' + 'cade' + 'CADE') == 5",
        "assert candidate(5 * 17) == False",
        "assert candidate(-2 ** 3) == -8",
    ) == [
        ([[3, 5, 7]], {"python_op": "=="}, (15, 105)),
        (["abcdecadeCADE"], {"python_op": "=="}, 5),
        ([85], {"python_op": "=="}, False),
        ([-8], {"python_op": "=="}, -8),
    ]


def test_truthiness_tolerance_and_tuple_forms() -> None:
    assert _convert(
        "assert candidate([1, 2], 3)",
        "assert not candidate('><')",
        "assert abs(candidate([1.0, 2.0, 3.0]) - 2.0/3.0) < 1e-6",
        "assert abs(candidate(2) - 1) <= 0",
        "assert tuple(candidate([1, 2])) == tuple([2, 1])",
    ) == [
        ([[1, 2], 3], {"python_op": "truthy"}, None),
        (["><"], {"python_op": "falsy"}, None),
        ([[1.0, 2.0, 3.0]], {"python_op": "abs<", "tol": 1e-6}, 2.0 / 3.0),
        ([2], {"python_op": "abs<=", "tol": 0}, 1),
        ([[1, 2]], {"python_op": "==", "convert": "tuple"}, (2, 1)),
    ]


def test_messages_docstrings_and_bare_names_play_no_part() -> None:
    assert _convert(
        '"""doc"""',
        "print",
        "assert True",
        "assert candidate(1) == 2, 'failed: ' + str(candidate(1))",
    ) == [([1], {"python_op": "=="}, 2)]


@pytest.mark.parametrize(
    "line",
    [
        "assert candidate(1) == other(1)",  # HumanEval/33 compares with another function
        "assert tuple(candidate([1])) == tuple(sort_third([1]))",
        "assert candidate(x=1) == 1",
        "assert candidate(*[1]) == 1",
        "assert candidate(1) != 2",
        "assert candidate(1) is 5",  # ``is`` only for True/False/None
        "assert abs(candidate(1) - 'a') < 1",
        "assert abs(candidate(1) + 1) < 1",
        "assert max(candidate(1) - 1) < 1",
        "assert candidate(1) == 1 / 0",  # raises when evaluated
        "assert candidate('a' * 10 ** 9) == 1",  # too large to fold
        "assert candidate(2 ** 100000) == 1",
        "assert candidate([0] * 200000) == 1",
        "assert candidate(1) == 1 < 2",
        "assert False",
        "for x in range(3): assert candidate(x) == x",
        "x = 1",
    ],
)
def test_anything_else_keeps_the_script(line: str) -> None:
    assert _convert("assert candidate(0) == 0", line) is None


def test_module_level_calls_keep_the_script() -> None:
    code = "import random\nrandom.seed(1)\n\ndef check(candidate):\n    assert candidate(1) == 1\n"
    assert check_to_calls(code, "f") is None
