"""Each input strategy, on its own, from a task's text only."""

from __future__ import annotations

import random

from assay.testgen import strategies
from assay.testgen.signature import examples, signature
from assay.testgen.types import T

PROMPT = '''from typing import List


def count_words(words: List[str], n: int) -> int:
    """Count the words longer than n.
    >>> count_words(["ab", "abc"], 2)
    1
    >>> count_words([], 0)
    0
    count_words(["x"], -1) ➞ 1
    """
'''
REF = PROMPT + "    return sum(len(w) > n for w in words)\n"


def sig():  # type: ignore[no-untyped-def]
    return signature(PROMPT, REF, "count_words")


def test_examples_are_read_from_the_docstring() -> None:
    s = sig()
    assert s.params == ("words", "n")
    assert s.types == (T("list", (T("str"),)), T("int"))
    assert s.examples == ((["ab", "abc"], 2), ([], 0), (["x"], -1))
    # the definition itself and calls that are not literals are not examples
    assert examples("def f(x):\n    >>> f(y)\n    >>> f(3)\n", "f", 1) == [(3,)]


def test_mutation_changes_one_argument_and_keeps_types() -> None:
    out = strategies.mutation(sig(), random.Random(1), 200)
    assert len(out) == 200
    seeds = set(map(repr, sig().examples))
    assert sum(repr(a) not in seeds for a in out) > 150  # new inputs, not copies
    for words, n in out:
        assert isinstance(words, list) and all(isinstance(w, str) for w in words)
        assert isinstance(n, int)
    assert any(len(w) != len(out[0][0]) for w, _ in out)


def test_mutation_handles_floats_tuples_dicts_and_nesting() -> None:
    rng = random.Random(3)
    t = T("tuple", (T("float"), T("dict", (T("str"), T("list", (T("int"),))))))
    value = (1.5, {"a": [1, 2]})
    seen = {repr(strategies.mutate(value, t, rng, "abc")) for _ in range(100)}
    assert len(seen) > 20
    for _ in range(50):
        f, d = strategies.mutate(value, t, rng, "abc")
        assert isinstance(f, float) and isinstance(d, dict)


def test_boundary_values_cover_empty_zero_negative_unicode_and_large() -> None:
    out = strategies.boundary(sig(), random.Random(0))
    words = [w for w, _ in out]
    ns = [n for _, n in out]
    assert [] in words
    assert any(len(w) == 1 for w in words)
    assert any(len(w) >= strategies.LARGE for w in words)  # complexity
    assert any(len(w) == 2 and w[0] == w[1] for w in words)  # duplicates
    assert {0, -1, 1}.issubset(ns)
    strs = strategies.boundary(
        signature("def f(s: str):\n    pass\n", "def f(s: str):\n    return s\n", "f"),
        random.Random(0),
    )
    texts = [s for (s,) in strs]
    assert "" in texts and any(any(ord(c) > 127 for c in s) for s in texts)
    assert any(len(s) >= strategies.LARGE for s in texts)


def test_hypothesis_strategies_follow_the_types_and_the_seed() -> None:
    a = strategies.from_types(sig(), seed=7, count=40)
    b = strategies.from_types(sig(), seed=7, count=40)
    c = strategies.from_types(sig(), seed=8, count=40)
    assert a == b
    assert a != c
    assert len(a) == 40
    for words, n in a:
        assert isinstance(words, list) and all(isinstance(w, str) for w in words)
        assert isinstance(n, int) and not isinstance(n, bool)


def test_types_come_from_the_contract_or_the_examples_without_annotations() -> None:
    prompt = 'def f(a, b):\n    """\n    >>> f(1.5, "x")\n    """\n'
    s = signature(prompt, prompt + "    return a\n", "f", "\n    assert isinstance(a, int)\n")
    assert s.types == (T("int"), T("str"))
    assert "def _assay_contract(a, b):" in s.contract_source


def test_hypothesis_draws_do_not_depend_on_the_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Hypothesis mixes in constants from the source of loaded modules; the same seed must
    still draw the same inputs whatever else the process imported, under any hash seed."""
    import os
    import subprocess
    import sys

    (tmp_path / "constmod.py").write_text('WORDS = ["zebra-constant", 123456789, -98765, 3.25]\n')
    code = (
        "import sys\n"
        "if sys.argv[1] == '1':\n"
        f"    sys.path.insert(0, {str(tmp_path)!r}); import constmod\n"
        "from assay.testgen import strategies\n"
        "from assay.testgen.signature import signature\n"
        "p = 'def f(a: list, s: str, n: int, x: float):\\n    pass\\n'\n"
        "print(repr(strategies.from_types(signature(p, p, 'f'), 5, 200)))\n"
    )
    outs = set()
    for extra, hash_seed in (("0", "1"), ("1", "2")):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run(
            [sys.executable, "-c", code, extra], env=env, capture_output=True, text=True, check=True
        )
        outs.add(run.stdout)
    assert len(outs) == 1


def test_numbers_change_representation_where_the_type_allows_it() -> None:
    rng = random.Random(2)
    as_float = [strategies.mutate(3, T("float"), rng, "a") for _ in range(200)]
    assert 3.0 in as_float and any(type(v) is float for v in as_float)
    as_int = [strategies.mutate(3, T("int"), rng, "a") for _ in range(200)]
    assert all(type(v) is int for v in as_int)  # an int parameter never gets a float


def test_mixed_examples_mean_any_value_and_read_ints_may_become_floats() -> None:
    prompt = (
        'def f(values):\n    """\n    >>> f([\'a\', 3.14, 5])\n    >>> f([1, {}, []])\n    """\n'
    )
    (t,) = signature(prompt, prompt + "    return values\n", "f").types
    kinds = {a.kind for a in t.args[0].args}
    assert {"str", "float", "int", "dict", "list", "bool", "none"} <= kinds
    rng = random.Random(0)
    (n,) = signature(
        'def g(n):\n    """\n    >>> g(3)\n    """\n', "def g(n):\n    return n\n", "g"
    ).types
    assert n.loose and any(type(strategies.mutate(3, n, rng, "a")) is float for _ in range(100))


def test_single_characters_change_case() -> None:
    rng = random.Random(0)
    out = {strategies.mutate("aba", T("str"), rng, "ab") for _ in range(300)}
    assert {"Aba", "abA"} & out


def test_ints_stay_under_the_cap_unless_the_prompt_writes_larger_ones() -> None:
    s = sig()
    assert strategies.int_cap(s) == strategies.INT_CAP
    assert strategies.magnitude(([3, -(10**9)], {"k": (7,)}, True)) == 10**9
    assert strategies.magnitude(([], "12345678901")) == 0  # digits in text are not ints
    big = signature(
        "def f(n: int) -> int:\n    '''\n    >>> f(12345678901234)\n    1\n    '''\n",
        "def f(n: int) -> int:\n    return 1\n",
        "f",
    )
    assert strategies.int_cap(big) == 12345678901234


def test_a_value_written_under_another_name_seeds_the_one_unnamed_parameter() -> None:
    # HumanEval/160's prompt: no call, "operator[...]" names a parameter, "array = [...]"
    # is the other one (typed by the contract) under another name
    prompt = (
        "def do_algebra(operator, operand):\n    '''\n    operator['+', '*', '-']\n"
        "    array = [2, 3, 4, 5]\n    result = 2 + 3 * 4 - 5\n    '''\n"
    )
    contract = "\n    assert all(type(x) == int and x >= 0 for x in operand)\n"
    s = signature(prompt, prompt + "    return 0\n", "do_algebra", contract)
    assert s.examples == ((["+", "*", "-"], [2, 3, 4, 5]),)
    # without a type for the unnamed parameter, nothing is guessed
    assert signature(prompt, prompt + "    return 0\n", "do_algebra").examples == ()
