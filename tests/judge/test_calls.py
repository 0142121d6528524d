"""``call`` tests: results come back as data and are compared on the trusted side."""

from __future__ import annotations

import time
import weakref

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase, _background, calls


def _call(fn: str, args: list[object], expected: object, **options: object) -> TestCase:
    return TestCase(
        kind="call", options={"fn_name": fn, "args": args, **options}, expected_value=expected
    )


SQUARES = Problem(
    "squares",
    [_call("sq", [2], 4), _call("sq", [3], 9), _call("sq", [-4], 16)],
    limits=Limits(time_s=2, memory_mb=128),
)


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def test_correct_solution_is_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(SQUARES, "def sq(x):\n    return x * x\n"))
    assert (j.verdict, j.passed, j.total, j.reward) == ("accepted", 3, 3, 1.0)


@pytest.mark.usefixtures("descriptors_past_1024")
def test_calls_in_a_process_whose_descriptors_pass_1024(judge: Judge) -> None:
    j = judge.judge(Submission(SQUARES, "def sq(x):\n    return x * x\n"))
    assert (j.verdict, j.passed, j.total, j.reward) == ("accepted", 3, 3, 1.0)


def test_wrong_and_raising(judge: Judge) -> None:
    j = judge.judge(
        Submission(
            SQUARES,
            "def sq(x):\n    if x < 0: raise ValueError('neg')\n    return x * x + (x == 3)\n",
        )
    )
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer", "runtime_error"]
    assert j.verdict == "wrong_answer"


@pytest.mark.parametrize(
    "code",
    [
        # an object whose __eq__ always says yes
        "class A:\n    def __eq__(self, o): return True\n    __hash__ = None\ndef sq(x):\n    return A()\n",
        # a builtin subclass that lies
        "class S(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\ndef sq(x):\n    return S(0)\n",
        # exit before answering
        "import sys\ndef sq(x):\n    sys.exit(0)\n",
        "import os\ndef sq(x):\n    os._exit(0)\n",
        # exit at import time
        "raise SystemExit(0)\n",
        # look for the expected value in the caller's frames
        "import sys\ndef sq(x):\n    f = sys._getframe(1)\n    while f:\n        for v in f.f_locals.values():\n            if v == 4 or v == 9 or v == 16: return v\n        f = f.f_back\n    return None\n",
        # NaN tricks
        "def sq(x):\n    return float('nan')\n",
        # print fake pass markers
        "print('accepted ok PASS')\ndef sq(x):\n    return None\n",
    ],
)
def test_reward_hacks_are_not_accepted(judge: Judge, code: str) -> None:
    j = judge.judge(Submission(SQUARES, code))
    assert j.verdict != "accepted"
    assert j.reward == 0.0


def test_float_tolerance_and_containers(judge: Judge) -> None:
    problem = Problem(
        "misc",
        [
            _call("half", [1], 0.5, atol=1e-9),
            _call("pair", [2], (2, [3, {"k": {4}}])),
            _call("gen", [3], [0, 1, 2]),
        ],
    )
    code = "def half(x): return x / 2 + 1e-12\ndef pair(x): return (x, [x + 1, {'k': {x + 2}}])\ndef gen(n):\n    yield from range(n)\n"
    j = judge.judge(Submission(problem, code))
    assert j.verdict == "accepted", j.reason


def test_call_tests_compare_as_the_datasets_assert_does(judge: Judge) -> None:
    """MBPP's ``assert f(x) == 240`` passes for 240.0, ``== False`` for 0 (issue 29): a
    call test is not stricter than the dataset's own assertion."""
    problem = Problem(
        "loose",
        [_call("area", [10, 24], 240), _call("odd", [2], False), _call("pts", [], [1, 2])],
    )
    code = (
        "def area(a, b): return a * b / 1.0\ndef odd(n): return n % 2\ndef pts(): return [1.0, 2]\n"
    )
    j = judge.judge(Submission(problem, code))
    assert (j.verdict, j.passed) == ("accepted", 3), j.reason


def test_loose_numbers_do_not_open_a_lying_answer(judge: Judge) -> None:
    """Values are still plain builtins decoded on the trusted side: a str, None or a tuple
    where the dataset's ``==`` would say no is still a wrong answer."""
    problem = Problem(
        "loose-no",
        [_call("a", [], 240), _call("b", [], 0), _call("c", [], [1, 2])],
    )
    code = "def a(): return '240'\ndef b(): return None\ndef c(): return (1, 2)\n"
    j = judge.judge(Submission(problem, code))
    assert [t.verdict for t in j.tests] == ["wrong_answer"] * 3


def test_time_limit_marks_remaining_calls(judge: Judge) -> None:
    problem = Problem("slow", [_call("f", [1], 1), _call("f", [2], 2)], limits=Limits(time_s=0.5))
    j = judge.judge(
        Submission(problem, "def f(x):\n    if x == 2:\n        while True: pass\n    return x\n")
    )
    assert [t.verdict for t in j.tests] == ["accepted", "time_limit"]
    assert j.verdict == "time_limit"


# A first test answered wrongly, then a loop on the second: as ``check`` stops at its first
# failed assert, a judge told to stop at the first failure must not wait for the second call
# (the requests go out ahead, so the program may have started it: it is stopped).
WRONG_THEN_LOOP = "def f(x):\n    if x == 2:\n        while True: pass\n    return x + 1\n"


def test_stop_on_failure_stops_a_later_call_that_loops(judge: Judge) -> None:
    problem = Problem("ff", [_call("f", [1], 1), _call("f", [2], 2)], limits=Limits(time_s=2))
    t0 = time.monotonic()
    j = judge.judge(Submission(problem, WRONG_THEN_LOOP), stop_on_failure=True)
    assert time.monotonic() - t0 < 1.5  # not the 2 s the loop would take to time out
    assert [t.verdict for t in j.tests] == ["wrong_answer"]
    assert (j.verdict, j.reward, j.passed) == ("wrong_answer", 0.0, 0)
    # Without it every test runs: the second one into the time limit.
    j = judge.judge(Submission(problem, WRONG_THEN_LOOP))
    assert [t.verdict for t in j.tests] == ["wrong_answer", "time_limit"]
    assert j.verdict == "wrong_answer"


def test_calls_and_replies_larger_than_the_socket_buffers_flow(judge: Judge) -> None:
    # ~6 MB each way, far beyond a socket's buffer: sending every request before reading
    # any reply would leave both sides blocked on a full buffer until the time limit.
    big = "x" * 65536
    problem = Problem(
        "echo",
        [_call("echo", [big + str(i)], big + str(i)) for i in range(100)],
        limits=Limits(time_s=20),
    )
    j = judge.judge(Submission(problem, "def echo(s):\n    return s\n"))
    assert (j.verdict, j.passed) == ("accepted", 100), j.reason


def test_stop_on_failure_runs_everything_when_all_pass(judge: Judge) -> None:
    j = judge.judge(Submission(SQUARES, "def sq(x):\n    return x * x\n"), stop_on_failure=True)
    assert (j.verdict, j.passed, j.total) == ("accepted", 3, 3)


def _op(fn: str, args: list[object], op: str, expected: object = None, **kw: object) -> TestCase:
    return _call(fn, args, expected, python_op=op, **kw)


ASSERTIONS = Problem(
    "assertions",
    [
        _op("even", [2], "truthy"),
        _op("even", [3], "falsy"),
        _op("third", [1.0], "abs<", 1 / 3, tol=1e-6),
        _op("third", [3], "abs<=", 1, tol=0),
        _op("rev", [[1, 2, 3]], "==", (3, 2, 1), convert="tuple"),
        _op("even", [4], "is", True),
    ],
    limits=Limits(time_s=2),
)
GOOD = (
    "def even(x):\n    return x % 2 == 0\n"
    "def third(x):\n    return x / 3\n"
    "def rev(xs):\n    return reversed(xs)\n"  # an iterator: materialised, then tuple()
)


def test_assertion_forms_accept_a_correct_solution(judge: Judge) -> None:
    j = judge.judge(Submission(ASSERTIONS, GOOD))
    assert j.verdict == "accepted", j.reason


@pytest.mark.parametrize(
    ("code", "failing"),
    [
        # truthiness decided by the submission's own object: never trusted
        ("class T:\n    def __bool__(self): return True\ndef even(x):\n    return T()\n", 0),
        # an answer the assertion cannot even compute on (abs of a string) fails, not crashes
        ("def third(x):\n    return 'x'\n", 2),
        # a submission's own ``abs`` or ``tuple`` does not reach the trusted assertion
        ("def abs(x):\n    return 0\ndef third(x):\n    return 99.0\n", 2),
        ("tuple = lambda x: (3, 2, 1)\ndef rev(xs):\n    return xs\n", 4),
        # NaN is never within a tolerance
        ("def third(x):\n    return float('nan')\n", 2),
        # ``is True`` needs the bool, not an equal int
        ("def even(x):\n    return 1 if x % 2 == 0 else 0\n", 5),
    ],
)
def test_assertion_forms_reject_wrong_and_gamed_answers(
    judge: Judge, code: str, failing: int
) -> None:
    j = judge.judge(Submission(ASSERTIONS, GOOD + code))
    assert j.verdict != "accepted"
    assert j.tests[failing].verdict != "accepted", j.tests[failing]


def test_unknown_assertion_is_a_validation_error(judge: Judge) -> None:
    from assay.errors import ValidationError

    bad = Problem("bad", [_op("f", [1], "approx", 1)])
    with pytest.raises(ValidationError) as info:
        judge.judge(Submission(bad, "def f(x): return x\n"))
    assert info.value.field == "tests[0].options.python_op"
    bad = Problem("bad", [_op("f", [1], "abs<", 1, tol="small")])
    with pytest.raises(ValidationError) as info:
        judge.judge(Submission(bad, "def f(x): return x\n"))
    assert info.value.field == "tests[0].options.tol"


GENERATORS = Problem(
    "generators",
    [
        _op("prefixed", [[], "j"], "==", []),  # HumanEval/29: ``candidate([], 'john') == []``
        _op("prefixed", [["ja", "x"], "j"], "==", ["ja"]),
    ],
)


def test_a_returned_generator_is_not_equal_to_a_list_in_an_assertion(judge: Judge) -> None:
    # As in the check run as a script: a generator never equals [] (CodeT sample 8600).
    gen = (
        "def prefixed(xs, p):\n    for x in xs:\n        if x.startswith(p):\n            yield x\n"
    )
    j = judge.judge(Submission(GENERATORS, gen))
    assert [t.verdict for t in j.tests] == ["wrong_answer", "wrong_answer"]
    listed = "def prefixed(xs, p):\n    return [x for x in xs if x.startswith(p)]\n"
    assert judge.judge(Submission(GENERATORS, listed)).verdict == "accepted"


def test_ranges_and_dict_views_keep_their_python_meaning(judge: Judge) -> None:
    problem = Problem(
        "views",
        [
            _op("keys", [{"a": 1}], "==", {"a"}),  # dict_keys == set is True in Python
            _op("span", [3], "==", range(3)),
            _op("span", [0], "falsy"),
            _op("items", [{"a": 1}], "==", (("a", 1),), convert="tuple"),
        ],
    )
    code = "def keys(d): return d.keys()\ndef span(n): return range(n)\ndef items(d): return d.items()\n"
    assert judge.judge(Submission(problem, code)).verdict == "accepted"
    # Plain comparisons (no python_op) still take an iterator as the list of its items.
    lenient = Problem("lenient", [_call("gen", [2], [0, 1])])
    j = judge.judge(Submission(lenient, "def gen(n):\n    yield from range(n)\n"))
    assert j.verdict == "accepted"


def test_call_tests_are_measured(runner: Runner) -> None:
    # Issue 14: call tests reported cpu_s, wall_s and peak memory 0, so the efficiency and
    # memory rewards and the records were blind to them. The run's kernel-measured CPU and
    # wall time are split over its tests; each test carries the run's peak.
    burn = (
        "def f(x):\n"
        "    block = bytearray(40 << 20)\n"
        "    n = 0\n"
        "    for i in range(1_500_000):\n"
        "        n += i\n"
        "    return x\n"
    )
    problem = Problem("burn", [_call("f", [1], 1), _call("f", [2], 2)], limits=Limits(time_s=5))
    j = Judge(runner).judge(Submission(problem, burn))
    assert j.verdict == "accepted"
    for t in j.tests:
        assert t.cpu_s > 0.02 and t.wall_s >= t.cpu_s * 0.5
        assert t.peak_memory_bytes > 40 << 20
    assert j.tests[0].cpu_s == j.tests[1].cpu_s  # one run, split evenly
    from assay.reward import EfficiencyReward, MemoryReward

    cpu = sum(t.cpu_s for t in j.tests)
    assert EfficiencyReward(reference_cpu_s=cpu / 2, floor_s=0.001)(j, problem).value < 0.75
    peak = j.tests[0].peak_memory_bytes
    assert MemoryReward(reference_peak_memory_bytes=peak / 4)(j, problem).value < 0.5
    # A failed run (the second call raises): every test still carries the run's figures.
    j = Judge(runner).judge(Submission(problem, burn.replace("return x", "return 1 // (x - 2)")))
    assert j.verdict != "accepted"
    assert all(t.cpu_s > 0.02 and t.peak_memory_bytes > 40 << 20 for t in j.tests)


def test_call_tests_are_measured_in_records(runner: Runner) -> None:
    from assay.executor import LocalExecutor
    from assay.telemetry import MemoryWriter

    problem = Problem("alloc", [_call("f", [1], 1)], limits=Limits(time_s=5))
    code = "def f(x):\n    block = bytearray(40 << 20)\n    return x\n"
    records = MemoryWriter()
    with LocalExecutor(runner, slots=1, records=records, cache=False) as ex:
        (result,) = ex.run([Submission(problem, code)], caller="test")
    assert result.verdict == "accepted"
    (record,) = records.records
    assert record["cpu_s"] > 0 and record["wall_s"] > 0
    assert record["peak_memory_bytes"] > 40 << 20


def test_an_answer_of_over_a_million_items_is_compared(judge: Judge) -> None:
    # HumanEval+ HumanEval/130's reference answers tri(1000004) with 1,000,005 items: a
    # count limit on decoded collections refused the dataset's own reference ("too many
    # items"). The reply's size (64 MiB) is the bound, not the number of items.
    n = 1_000_004
    problem = Problem(
        "long", [_call("upto", [n], list(range(n + 1)))], limits=Limits(time_s=10, memory_mb=512)
    )
    j = judge.judge(Submission(problem, "def upto(n):\n    return list(range(n + 1))\n"))
    assert (j.verdict, j.reason) == ("accepted", "all 1 tests passed")
    off = judge.judge(Submission(problem, "def upto(n):\n    return list(range(n))\n"))
    assert off.verdict == "wrong_answer"


def test_a_generator_that_never_ends_is_answered(judge: Judge) -> None:
    # Its first items are taken (as many as the codec passes), not all of them: the
    # comparison answers, as `f() == [...]` does in a test run as a script.
    problem = Problem("forever", [_call("gen", [], [1, 1])], limits=Limits(time_s=10))
    j = judge.judge(Submission(problem, "def gen():\n    while True:\n        yield 1\n"))
    assert j.verdict == "wrong_answer", j.reason


@pytest.fixture(params=["supervising thread", "own thread"])
def channel_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the call channel is served: by the thread that supervises the run (the
    default tier; no background thread may be started), or, for a tier that serves no
    companion (gVisor's), by the judging thread while the run goes on in the background."""
    if request.param == "supervising thread":

        def no_thread(fn: object) -> None:
            raise AssertionError("the default tier's call run needs no background thread")

        monkeypatch.setattr(_background, "start", no_thread)
    else:
        monkeypatch.setattr(Runner, "serves_companions", property(lambda self: False))
    return str(request.param)


def test_both_channel_paths_judge_alike(judge: Judge, channel_path: str) -> None:
    j = judge.judge(Submission(SQUARES, "def sq(x):\n    return x * x\n"))
    assert (j.verdict, j.passed) == ("accepted", 3)
    j = judge.judge(
        Submission(
            SQUARES,
            "def sq(x):\n    if x < 0: raise ValueError('neg')\n    return x * x + (x == 3)\n",
        )
    )
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer", "runtime_error"]
    problem = Problem("ff", [_call("f", [1], 1), _call("f", [2], 2)], limits=Limits(time_s=2))
    t0 = time.monotonic()
    j = judge.judge(Submission(problem, WRONG_THEN_LOOP), stop_on_failure=True)
    assert time.monotonic() - t0 < 1.5  # the looping call was stopped
    assert [t.verdict for t in j.tests] == ["wrong_answer"]
    big = "x" * 65536
    echo = Problem(
        "echo", [_call("echo", [big + str(i)], big + str(i)) for i in range(40)], Limits(time_s=20)
    )
    j = judge.judge(Submission(echo, "def echo(s):\n    return s\n"))
    assert (j.verdict, j.passed) == ("accepted", 40), j.reason
    exits = judge.judge(Submission(SQUARES, "import os\nos._exit(0)\n"))
    assert [t.verdict for t in exits.tests] == ["runtime_error"] * 3


def test_an_error_while_grading_stops_the_run_and_is_raised(
    runner: Runner, channel_path: str
) -> None:
    """An exception from ``keep_going`` (the grading) ends the channel, stops the program's
    later call that loops, and reaches the caller: it is never mistaken for a verdict."""

    def boom(i: int, reply: calls.Reply) -> bool:
        raise KeyError("grading failed")

    t0 = time.monotonic()
    with pytest.raises(KeyError, match="grading failed"):
        calls.call_values(
            runner, WRONG_THEN_LOOP.encode(), [("f", [1]), ("f", [2])], Limits(time_s=3), boom
        )
    assert time.monotonic() - t0 < 2  # not the 3 s of the loop
    ok = runner.run("print(1)")  # the slot it ran in was released, the sandbox still works
    assert ok.status == "ok", ok


@pytest.mark.parametrize(
    "reply",
    [b"\xff\xfe{}\n", b'{"ok": 4}\x00\n', b"[4]\n", b'"\xe9"\n', b"[" * 100_000 + b"\n"],
    ids=["not utf-8", "trailing nul", "not an object", "latin-1 string", "nested too deep"],
)
def test_a_reply_the_program_forges_is_a_wrong_answer(judge: Judge, reply: bytes) -> None:
    """The program can write to the channel itself: a line that is not a UTF-8 JSON object
    is a malformed reply (wrong answer), never a crash of the judge nor a pass."""
    code = f"import os\nos.write(3, {reply!r})\ndef sq(x):\n    return x * x\n"
    j = judge.judge(Submission(SQUARES, code))
    assert j.tests[0].verdict == "wrong_answer", j.tests[0]
    assert "malformed reply" in j.tests[0].message


def test_a_tests_request_line_is_encoded_once_and_checked_by_identity(
    judge: Judge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A problem's call tests are encoded for its first sample only; a cached line serves
    only the very object it was made for (an id can be reused by another test)."""
    encoded: list[str] = []
    line = calls._line

    def counting(fn: str, args: list[object]) -> bytes:
        encoded.append(fn)
        return line(fn, args)

    monkeypatch.setattr(calls, "_line", counting)
    monkeypatch.setattr(calls, "_LINES", calls._Lines())
    problem = Problem("cubes", [_call("cube", [2], 8), _call("cube", [3], 27)])
    for _ in range(3):
        j = judge.judge(Submission(problem, "def cube(x):\n    return x ** 3\n"))
        assert j.verdict == "accepted"
    assert encoded == ["cube", "cube"]
    assert calls._LINES.of(problem.tests) == [line("cube", [2]), line("cube", [3])]

    other = _call("cube", [4], 64)
    stale = (weakref.ref(problem.tests[0]), b"a stale line\n")
    calls._LINES._lines[id(other)] = stale  # as if another test had had its id
    assert calls._LINES.of([other]) == [line("cube", [4])]


def test_request_lines_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = calls._Lines()
    monkeypatch.setattr(cache, "MAX_BYTES", 1000)
    tests = [_call("f", ["x" * 90], None) for _ in range(30)]
    for t in tests:
        assert cache.of([t]) == [calls._line("f", ["x" * 90])]
    assert cache._bytes <= 1000 and len(cache._lines) < 30
    assert cache._bytes == sum(len(line) for _t, line in cache._lines.values())
    assert id(tests[-1]) in cache._lines and id(tests[0]) not in cache._lines


def test_request_lines_do_not_keep_their_tests_alive() -> None:
    """A service builds a problem per request: its tests' lines go with them."""
    import gc

    cache = calls._Lines()
    tests = [_call("f", [i], None) for i in range(50)]
    assert cache.of(tests) == [calls._line("f", [i]) for i in range(50)]
    assert len(cache._lines) == 50
    del tests
    gc.collect()
    kept = _call("g", [1], None)
    assert cache.of([kept]) == [calls._line("g", [1])]  # the dead are purged on the way
    assert list(cache._lines) == [id(kept)]
    assert cache._bytes == len(calls._line("g", [1]))
