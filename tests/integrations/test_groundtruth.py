"""Each ground-truth dialect parses into the tests the dataset means (no sandbox needed)."""

from __future__ import annotations

import json

import pytest

from assay import Problem, TestCase, ValidationError
from assay.integrations import parse_ground_truth

STDIO = {"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}
CALL = {"inputs": [[1, 2], [3, 4]], "outputs": [3, 7], "fn_name": "add"}


def test_verl_inputs_outputs_stdio_from_json_string() -> None:
    p = parse_ground_truth(json.dumps(STDIO), data_source="codecontests")
    assert [(t.kind, t.input, t.expected) for t in p.tests] == [
        ("stdio", "1 2\n", "3\n"),
        ("stdio", "3 4\n", "7\n"),
    ]
    assert p.id.startswith("codecontests/gt-")


def test_verl_inputs_outputs_with_fn_name_gives_call_tests() -> None:
    p = parse_ground_truth(CALL)
    assert [t.kind for t in p.tests] == ["call", "call"]
    assert p.tests[1].options["fn_name"] == "add"
    assert p.tests[1].options["args"] == [3, 4]
    assert p.tests[1].expected_value == 7


def test_apps_record_with_input_output_string() -> None:
    rec = {"problem_id": 17, "input_output": json.dumps(STDIO), "question": "add"}
    p = parse_ground_truth(rec, data_source="apps")
    assert p.id == "apps/17"
    assert len(p.tests) == 2


def test_prime_verification_info_keeps_language() -> None:
    info = {
        "language": "cpp",
        "test_cases": [{"type": "stdin_stdout", "input": "1\n", "output": "1\n"}],
    }
    for value in (info, json.dumps(info), {"verification_info": json.dumps(info)}):
        p = parse_ground_truth(value)
        assert p.metadata["language"] == "cpp"
        assert p.tests[0].kind == "stdio"


def test_prime_function_call_and_bare_case_list() -> None:
    cases = [{"type": "function_call", "fn_name": "f", "input": [2], "output": [4]}]
    for value in (cases, {"test_cases": cases}):
        t = parse_ground_truth(value).tests[0]
        assert (t.kind, t.options["fn_name"], t.options["args"]) == ("call", "f", [2])


def test_livecodebench_public_tests_with_func_name_from_extra_info() -> None:
    cases = [
        {"input": "[1, 2]\n3", "output": "6", "testtype": "functional"},
        {"input": "5\n", "output": "5\n", "testtype": "stdin"},
    ]
    p = parse_ground_truth(json.dumps(cases), extra_info={"metadata": {"func_name": "go"}})
    assert p.tests[0].options == {"fn_name": "go", "args": [[1, 2], 3], "tuples_as_lists": True}
    assert p.tests[0].expected_value == 6
    assert p.tests[1].kind == "stdio"
    rec = {"public_test_cases": json.dumps(cases[:1]), "metadata": json.dumps({"func_name": "h"})}
    assert parse_ground_truth(rec).tests[0].options["fn_name"] == "h"


def test_livecodebench_func_name_inside_the_test() -> None:  # DeepCoder keeps it there
    cases = [
        {"input": "1", "output": "2", "testtype": "functional", "metadata": {"func_name": "g"}}
    ]
    assert parse_ground_truth(cases).tests[0].options["fn_name"] == "g"


def test_functional_tests_without_a_function_name_are_rejected() -> None:
    cases = [{"input": "1", "output": "2", "testtype": "functional"}]
    with pytest.raises(ValidationError) as err:
        parse_ground_truth(cases)
    assert err.value.field == "ground_truth.metadata.func_name"


def test_assert_strings() -> None:
    for value in (["assert f(1) == 2"], {"assert_case": ["assert f(1) == 2"]}):
        p = parse_ground_truth(value)
        assert p.tests == [TestCase(kind="script", code="assert f(1) == 2")]


class ArrayLike:
    """Stands for a numpy array, as parquet readers hand nested lists over."""

    def __init__(self, items: list[str]) -> None:
        self.items = items

    def tolist(self) -> list[str]:
        return list(self.items)


def test_verl_reward_model_wrapper_and_array_likes() -> None:
    value = {"style": "rule", "ground_truth": {"inputs": ArrayLike(["1\n"]), "outputs": ["1\n"]}}
    assert parse_ground_truth(value).tests[0].input == "1\n"


def test_problem_passes_through() -> None:
    p = Problem("x", [TestCase(input="", expected="1")])
    assert parse_ground_truth(p) is p


def test_equal_tests_give_equal_ids() -> None:
    assert parse_ground_truth(STDIO).id == parse_ground_truth(json.dumps(STDIO)).id
    assert parse_ground_truth(STDIO).id != parse_ground_truth(CALL).id


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("{not json", "ground_truth"),
        ({"answer": 42}, "ground_truth"),
        ([], "ground_truth"),
        ([1, 2], "ground_truth"),
        (42, "ground_truth"),
        ({"inputs": ["1"], "outputs": []}, "ground_truth.input_output"),
        ({"inputs": [], "outputs": []}, "ground_truth.tests"),
        ({"test_cases": [{"type": "stdin_stdout", "input": "1"}]}, "ground_truth"),
        ({"test_cases": [{"type": "magic"}]}, "ground_truth.verification_info.test_cases[0].type"),
        ({"verification_info": "[oops"}, "ground_truth.verification_info"),
    ],
)
def test_bad_ground_truth_names_the_field(value: object, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_ground_truth(value)
    assert err.value.field == field
