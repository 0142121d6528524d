"""Stdin problems: token mutation of the given inputs, kept only where the input validator
accepts them; outputs from the reference in the sandbox, flaky ones dropped."""

from __future__ import annotations

import random

import pytest

from assay import Limits, Runner
from assay.testgen.stdin import StdinOptions, StdinTask, generate_stdin, mutate_tokens, mutations

INPUTS = ("3\n1 2 3\n", "1\n-5\n", "4\n10 20 30 40\n")
REFERENCE = "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs[:n]))\n"
# Kattis convention: exit 42 accepts, 43 rejects.
VALIDATOR = """import sys
lines = sys.stdin.read().split("\\n")
try:
    assert len(lines) == 3 and lines[2] == ""
    n = int(lines[0])
    assert 1 <= n <= 10 and lines[0] == str(n)
    xs = lines[1].split(" ")
    assert len(xs) == n and all(x == str(int(x)) and -100 <= int(x) <= 100 for x in xs)
except (AssertionError, ValueError):
    sys.exit(43)
sys.exit(42)
"""
SMALL = StdinOptions(mutations=40, max_tests=12, max_mutants=8)


def valid(text: str) -> bool:
    lines = text.split("\n")
    if len(lines) != 3 or lines[2] != "":
        return False
    try:
        n = int(lines[0])
        xs = [int(x) for x in lines[1].split(" ")]
    except ValueError:
        return False
    return 1 <= n <= 10 and len(xs) == n and all(-100 <= x <= 100 for x in xs)


def test_token_mutation_changes_one_thing_and_follows_the_seed() -> None:
    a = mutations(list(INPUTS), random.Random(3), 50)
    assert a == mutations(list(INPUTS), random.Random(3), 50)
    assert len(set(a) - set(INPUTS)) > 20
    one = [mutate_tokens("5 7\nab\n", random.Random(s)) for s in range(60)]
    assert any(m.startswith(("4 7", "6 7", "10 7", "2 7", "0 7")) for m in one)  # numbers
    assert any("ab" not in m and m.count("\n") == 2 for m in one)  # words
    assert any(m.count("\n") != 2 for m in one)  # lines repeated or dropped
    # ints stay under the cap (or the largest the inputs write)
    big = mutations(["5\n"], random.Random(0), 300)
    assert max(abs(int(t)) for m in big for t in m.split()) <= 10**6


def test_mutated_inputs_are_kept_only_where_the_validator_accepts(runner: Runner) -> None:
    task = StdinTask("sum", REFERENCE, INPUTS, validator=VALIDATOR)
    p = generate_stdin(runner, task, SMALL)
    q = p.metadata["quality"]
    assert q["dropped"]["invalid"] > 0  # the validator said no to some mutations
    assert q["candidates"]["mutation"] > 0
    assert len(p.tests) <= 12 and p.limits.time_s >= 1.0
    assert {t.input for t in p.tests} >= set(INPUTS) or len(p.tests) == 12
    for t in p.tests:
        assert valid(t.input), t.input
        n, xs = t.input.split("\n")[:2]
        assert t.expected == f"{sum(int(x) for x in xs.split()[: int(n)])}\n"
    assert q["mutation_score"] is not None and q["mutation_score"] >= 0.5
    assert p == generate_stdin(runner, task, SMALL)  # same seed, same suite


def test_without_a_validator_nothing_is_mutated(runner: Runner) -> None:
    p = generate_stdin(runner, StdinTask("sum", REFERENCE, INPUTS), SMALL)
    assert sorted(t.input for t in p.tests) == sorted(INPUTS)
    assert p.metadata["quality"]["candidates"] == {"given": 3}


@pytest.mark.parametrize(
    "flaky",
    [
        "print(hash('x') % 1000)\n",  # the hash seed differs between the two runs
        "import time\nprint(time.time_ns())\n",  # the clock
    ],
)
def test_flaky_outputs_are_dropped(runner: Runner, flaky: str) -> None:
    ref = "import sys\nif sys.stdin.read().startswith('1'):\n" + "".join(
        "    " + line + "\n" for line in flaky.splitlines()
    )
    ref += "else:\n    print('same')\n"
    p = generate_stdin(runner, StdinTask("f", ref, INPUTS), SMALL)
    assert p.metadata["quality"]["dropped"] == {"flaky": 1}
    assert "1\n-5\n" not in [t.input for t in p.tests]


def test_a_reference_that_fails_or_loops_costs_only_its_input(runner: Runner) -> None:
    ref = (
        "s = input()\nif s == '1':\n    while True:\n        pass\n"
        "if s == '4':\n    raise SystemExit(3)\nprint(s)\n"
    )
    opts = StdinOptions(max_mutants=0, run_limits=Limits(time_s=1.0))
    p = generate_stdin(runner, StdinTask("f", ref, INPUTS), opts)
    assert [t.input for t in p.tests] == ["3\n1 2 3\n"]
    assert p.metadata["quality"]["dropped"] == {"timeout": 1, "error": 1}
