"""The whole pipeline on small tasks, in the sandbox."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assay import Runner
from assay.errors import ValidationError
from assay.formats import assay_suite
from assay.testgen import Options, generate, task_from_row

PROMPT = '''def scale(x: int, s: str) -> str:
    """Repeat s x times, or say 'none'.
    >>> scale(2, "ab")
    'abab'
    >>> scale(0, "q")
    'none'
    """
'''
BODY = """    if x <= 0:
        return "none"
    return s * x
"""
CONTRACT = '\n    assert isinstance(x, int) and x < 50, "invalid inputs" # $_CONTRACT_$\n'
SMALL = Options(
    mutations=40, hypothesis=20, holdout_mutations=20, holdout_hypothesis=10, max_tests=20
)


def row(**extra: object) -> dict[str, object]:
    return {
        "task_id": "t/0",
        "prompt": PROMPT,
        "entry_point": "scale",
        "canonical_solution": BODY,
        **extra,
    }


def args_of(problem):  # type: ignore[no-untyped-def]
    return [t.options["args"] for t in problem.tests]


def test_generation_needs_only_the_task_text_and_reference(runner: Runner) -> None:
    # no base_input / plus_input / test: the generator never reads them
    p = generate(runner, task_from_row(row()), SMALL)
    q = p.metadata["quality"]
    assert [2, "ab"] in [list(a) for a in args_of(p)]  # the docstring's examples stay
    assert q["mutation_score"] is not None and q["mutation_score"] >= 0.9
    assert q["coverage"] == 1.0
    assert q["cover_size"] <= len(p.tests) <= 20
    for t in p.tests:
        x, s = t.options["args"]
        assert t.expected_value == ("none" if x <= 0 else s * x)


def test_dataset_test_fields_are_ignored(runner: Runner) -> None:
    poisoned = row(base_input="not json", plus_input=[[1]], test="raise SystemExit")
    assert task_from_row(poisoned) == task_from_row(row())


def test_contract_filters_inputs(runner: Runner) -> None:
    p = generate(runner, task_from_row(row(contract=CONTRACT)), SMALL)
    assert all(a[0] < 50 for a in args_of(p))
    assert p.metadata["quality"]["dropped"].get("contract", 0) > 0
    unfiltered = generate(runner, task_from_row(row()), SMALL)
    assert any(a[0] >= 50 for a in args_of(unfiltered))  # boundary 100, 10**6 are drawn


@pytest.mark.parametrize(
    "flaky",
    [
        "    if x > 5:\n        return str(hash(s))\n",  # hash() differs between hash seeds
        "    import time\n    if x > 5:\n        return str(time.perf_counter_ns())\n",  # a clock
    ],
)
def test_flaky_inputs_are_dropped(runner: Runner, flaky: str) -> None:
    p = generate(runner, task_from_row(row(canonical_solution=flaky + BODY)), SMALL)
    # hash("") is 0 under every hash seed: that answer is stable, the others are not
    assert all(a[0] <= 5 or ("hash" in flaky and a[1] == "") for a in args_of(p))
    q = p.metadata["quality"]
    assert q["dropped"]["flaky"] > 0


def test_inputs_two_references_disagree_on_are_ambiguous(runner: Runner) -> None:
    other = PROMPT + "    if x <= 0:\n        return 'none'\n    return (s * x)[:6]\n"
    p = generate(runner, task_from_row(row(references=[other])), SMALL)
    q = p.metadata["quality"]
    assert q["ambiguous"] > 0 and q["dropped"]["ambiguous"] == q["ambiguous"]
    assert all(len(t.expected_value) <= 6 for t in p.tests)  # only inputs both agree on


def test_a_wrong_reference_among_three_is_suspect(runner: Runner) -> None:
    wrong = PROMPT + "    return 'none' if x <= 0 else s\n"
    good = PROMPT + "    return 'none' if x <= 0 else ''.join([s] * x)\n"
    p = generate(runner, task_from_row(row(references=[good, wrong])), SMALL)
    assert p.metadata["quality"]["suspect_references"] == [2]


def test_same_seed_same_suite_other_seed_other_suite(runner: Runner) -> None:
    task = task_from_row(row(contract=CONTRACT))
    a = assay_suite.dumps(generate(runner, task, SMALL))
    b = assay_suite.dumps(generate(runner, task, SMALL))
    c = assay_suite.dumps(generate(runner, task, replace(SMALL, seed=1)))
    assert a == b
    assert a != c


def test_quality_gate_marks_weak_suites(runner: Runner) -> None:
    task = task_from_row(row())
    weak = Options(
        mutations=0,
        hypothesis=0,
        holdout_mutations=40,
        holdout_hypothesis=20,
        max_tests=1,
        fill=False,
        cover_k=1,
        min_mutation_score=0.99,
    )
    # only examples and boundary values in the pool; the gate compares its score
    p = generate(runner, task, weak)
    q = p.metadata["quality"]
    assert q["fit_for_training"] == (q["mutation_score"] >= 0.99)


def test_a_task_without_any_usable_input_is_an_error(runner: Runner) -> None:
    with pytest.raises(ValidationError, match="no generated input"):
        generate(runner, task_from_row(row(canonical_solution="    raise ValueError\n")), SMALL)


def test_gate_can_be_reapplied_to_a_written_suite(runner: Runner) -> None:
    from assay.testgen.pipeline import with_gate

    p = generate(runner, task_from_row(row()), SMALL)
    score = p.metadata["quality"]["mutation_score"]
    assert with_gate(p, score).metadata["quality"]["fit_for_training"] is True
    if score < 1.0:
        assert with_gate(p, 1.0).metadata["quality"]["fit_for_training"] is False
    assert with_gate(p, 0.0).metadata["quality"]["min_mutation_score"] == 0.0


def test_mbppplus_rows_keep_their_whole_program_reference() -> None:
    row = {
        "task_id": "Mbpp/1",
        "prompt": '"""\nassert twice(2) == 4\n"""\n',
        "entry_point": "twice",
        "canonical_solution": "def twice(x):\n    return 2 * x\n",
    }
    assert task_from_row(row).reference == row["canonical_solution"]


def test_inputs_the_reference_is_slow_on_are_dropped(runner: Runner) -> None:
    slow = "    if x > 20:\n        sum(range(40_000_000))\n"
    p = generate(runner, task_from_row(row(canonical_solution=slow + BODY)), SMALL)
    assert all(a[0] <= 20 for a in args_of(p))
    assert p.metadata["quality"]["dropped"]["slow"] > 0


def test_ints_larger_than_a_plain_loop_can_count_to_are_left_out(runner: Runner) -> None:
    # sum_to_n as HumanEval/60 writes it: a closed form answers n = 10**9 + 7 at once, but a
    # correct loop would take a minute; such inputs are left out with the reason.
    prompt = 'def sum_to_n(n: int) -> int:\n    """\n    >>> sum_to_n(30)\n    465\n    """\n'
    task = task_from_row(
        {
            "task_id": "t/60",
            "prompt": prompt,
            "entry_point": "sum_to_n",
            "canonical_solution": "    return n * (n + 1) // 2\n",
        }
    )
    p = generate(runner, task, SMALL)
    assert all(abs(a[0]) <= 10**6 for a in args_of(p))
    q = p.metadata["quality"]
    assert q["dropped"].get("large_int", 0) > 0 and "large_int" in q["dropped_examples"]
