"""Reference runs in the sandbox: batching, contracts, and programs that loop, eat memory
or crash on some inputs (each costs its input only, never the run)."""

from __future__ import annotations

from assay import Limits, Runner
from assay.testgen import oracle

REF = """
import collections, itertools, os

def f(n):
    if n == 1:
        while True:          # a loop in Python code: the per-call timer stops it
            pass
    if n == 2:
        collections.deque(itertools.repeat(0, 10 ** 12), maxlen=0)  # a loop in C code
    if n == 3:
        blocks = []
        while True:          # eats memory until the sandbox says no
            blocks.append(bytearray(16 << 20))
    if n == 4:
        os._exit(9)          # the whole run dies
    if n == 5:
        raise ValueError("five")
    print("noise on stdout does not confuse the protocol")
    return n * 10
"""


def test_a_reference_that_loops_or_eats_memory_costs_only_its_input(runner: Runner) -> None:
    inputs = [[0], [1], [6], [2], [7], [3], [8], [4], [9], [5], [10]]
    # call_s leaves the memory eater time to reach the limit on a loaded machine (filling
    # 256 MiB costs CPU too)
    got = oracle.answers(
        runner, REF, "f", inputs, call_s=1.0, limits=Limits(time_s=2.0, memory_mb=256)
    )
    by_n = {args[0]: a for args, a in zip(inputs, got, strict=True)}
    for n in (0, 6, 7, 8, 9, 10):
        assert by_n[n].status == "ok" and by_n[n].value == n * 10, by_n[n]
    assert by_n[1].status == "timeout"
    assert by_n[2].status == "crash" and "time_limit" in by_n[2].message
    assert by_n[3].status in ("error", "crash")  # MemoryError or killed by the cgroup
    assert by_n[4].status == "crash"
    assert by_n[5].status == "error" and "ValueError: five" in by_n[5].message


def test_contract_rejects_inputs_inside_the_sandbox(runner: Runner) -> None:
    contract = (
        "def _assay_contract(n):\n    assert isinstance(n, int) and n >= 0\n    return True\n"
    )
    got = oracle.answers(runner, "def f(n):\n    return n + 1\n", "f", [[1], [-1], [2.5]], contract)
    assert [a.status for a in got] == ["ok", "contract", "contract"]
    assert got[0].value == 2


def test_coverage_lines_are_traced(runner: Runner) -> None:
    code = "def f(n):\n    if n > 0:\n        return 1\n    return 0\n"
    got = oracle.answers(runner, code, "f", [[1], [-1]], trace=True)
    assert got[0].lines == {2, 3}
    assert got[1].lines == {2, 4}


def test_kills_names_the_inputs_each_program_fails(runner: Runner) -> None:
    ref = "def f(n):\n    return n * 2\n"
    programs = [
        ref,
        "def f(n):\n    return n + n if n != 3 else 0\n",
        "def f(n):\n    while True:\n        pass\n",
        "def f(n:\n",
    ]
    inputs = [[1], [2], [3]]
    got = oracle.kills(runner, programs, "f", inputs, [2, 4, 6], [0.2] * 3)
    assert got[0].killed_by == ()
    assert got[1].killed_by == (2,)
    assert got[2].killed_by == (0, 1, 2)
    assert got[3].killed_by == (-1,)


def test_answers_of_subclasses_and_iterators_arrive_as_plain_values(runner: Runner) -> None:
    code = (
        "import collections, enum\n"
        "class Color(enum.IntEnum):\n    RED = 3\n"
        "def f(n):\n"
        "    if n == 0: return Color.RED\n"
        "    if n == 1: return collections.Counter('aab')\n"
        "    if n == 2: return (i * i for i in range(3))\n"
        "    if n == 3: return {'a': 1}.keys()\n"
        "    if n == 4: return collections.namedtuple('P', 'x y')(1, 2)\n"
        "    return object()\n"
    )
    got = oracle.answers(runner, code, "f", [[0], [1], [2], [3], [4], [5]])
    values = [a.value for a in got[:5]]
    assert values == [3, {"a": 2, "b": 1}, [0, 1, 4], ["a"], (1, 2)]
    assert [type(v) for v in values] == [int, dict, list, list, tuple]
    assert got[5].status == "error" and "not a plain value" in got[5].message


def test_kills_compare_as_the_judge_does(runner: Runner) -> None:
    # floats within tolerance pass; True == 1 as in Python (issue 29); a list is not a tuple
    programs = [
        "def f(n):\n    return 0.1 + 0.2\n",
        "def f(n):\n    return True\n",
        "def f(n):\n    return [1]\n",
    ]
    got = oracle.kills(runner, programs, "f", [[0]], [0.3], [0.2], atol=1e-9)
    assert got[0].killed_by == ()
    assert got[1].killed_by == (0,)
    assert oracle.kills(runner, programs[1:], "f", [[0]], [1], [0.2])[0].killed_by == ()
    assert oracle.kills(runner, programs[2:], "f", [[0]], [(1,)], [0.2])[0].killed_by == (0,)


def test_the_oracle_ships_with_the_judges_codec_in_front() -> None:
    from assay.judge._trusted import CODEC, source

    script = oracle._script()
    assert script.startswith(source(CODEC))
    assert b"from _assay_codec import" not in script
    compile(script, "/work/oracle.py", "exec")


def test_programs_compile_without_the_codecs_future_import(runner: Runner) -> None:
    # as plain Python: the annotation is evaluated at definition, so this reference fails
    got = oracle.answers(runner, "def f(n: Undefined):\n    return n\n", "f", [[1]])
    assert got[0].status == "crash"
    kill = oracle.kills(runner, ["def f(n: Undefined):\n    return n\n"], "f", [[1]], [1], [0.2])
    assert kill[0].killed_by == (-1,)
