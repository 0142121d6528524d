from __future__ import annotations

import pytest

from assay import Limits, Runner, ValidationError
from assay.judge import Judge, Problem, Submission, TestCase

ADD = Problem(
    "add",
    [TestCase(input="1 2\n", expected="3\n"), TestCase(input="40 2\n", expected="42\n")],
    limits=Limits(time_s=1, memory_mb=128),
)


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def test_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "a, b = map(int, input().split())\nprint(a + b)"))
    assert (j.verdict, j.reward, j.passed, j.total) == ("accepted", 1.0, 2, 2)


def test_wrong_answer_names_the_test(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "print(3)"))
    assert j.verdict == "wrong_answer" and j.reward == 0.0
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer"]
    assert "test 1" in j.reason


def test_exit_zero_without_output_is_not_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "import os\nos._exit(0)"))
    assert j.verdict == "wrong_answer"


def test_compile_error_stops(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "int main( {", "c"))
    assert j.verdict == "compile_error" and len(j.tests) == 1


def test_time_limit(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "while True: pass"), stop_on_failure=True)
    assert j.verdict == "time_limit" and len(j.tests) == 1


def test_problem_without_tests_is_an_error() -> None:
    with pytest.raises(ValidationError) as info:
        Problem("empty", [])
    assert info.value.field == "tests"


# A program with a function (for call tests) and a main (for stdio tests): the main doubles
# its input, except on "loop", where it never ends.
MIXED_CODE = (
    "import sys\n"
    "def f(x):\n"
    "    return x * 2\n"
    "if __name__ == '__main__':\n"
    "    data = sys.stdin.read().strip()\n"
    "    while data == 'loop':\n"
    "        pass\n"
    "    print(int(data) * 2)\n"
)


def _mixed(*tests: TestCase) -> Problem:
    return Problem("mixed", list(tests), limits=Limits(time_s=0.5))


def _call(arg: int, expected: int) -> TestCase:
    return TestCase(kind="call", options={"fn_name": "f", "args": [arg]}, expected_value=expected)


def test_stop_on_failure_counts_passed_and_total_one_way(judge: Judge) -> None:
    # Issue 14: a stdio test that fails before a call test that passes gave passed 1,
    # total 2, tests [(0, wrong_answer), (2, accepted)]. total is the problem's count and
    # passed the tests before the first failure (in index order).
    problem = _mixed(
        TestCase(input="1\n", expected="3\n"),
        TestCase(input="2\n", expected="4\n"),
        _call(2, 4),
    )
    stop = judge.judge(Submission(problem, MIXED_CODE), stop_on_failure=True)
    assert [(t.index, t.verdict) for t in stop.tests] == [(0, "wrong_answer")]
    assert (stop.verdict, stop.passed, stop.total) == ("wrong_answer", 0, 3)
    every = judge.judge(Submission(problem, MIXED_CODE))
    assert (every.verdict, every.passed, every.total) == ("wrong_answer", 2, 3)


def test_stop_on_failure_gives_the_verdict_of_all_tests(judge: Judge) -> None:
    # The first failing test by index decides, whichever kind of test runs fastest.
    problem = _mixed(TestCase(input="loop\n", expected="0\n"), _call(1, 3))
    every = judge.judge(Submission(problem, MIXED_CODE))
    stop = judge.judge(Submission(problem, MIXED_CODE), stop_on_failure=True)
    assert every.verdict == stop.verdict == "time_limit"
    assert (stop.passed, stop.total, len(stop.tests)) == (0, 2, 1)


def test_combine_with_stop_on_failure_keeps_the_tests_up_to_the_first_failure() -> None:
    # Parts judged in parallel sandboxes: the call test (index 2) passed, the stdio part
    # stopped at its failure (index 0). One meaning of passed: as if run in order.
    from assay.judge import Judgement, TestResult, combine

    stdio = Judgement("wrong_answer", [TestResult(0, "wrong_answer")], 0.0, total=2)
    call = Judgement("accepted", [TestResult(0, "accepted")], 1.0, total=1)
    merged = combine([([0, 1], stdio), ([2], call)], 3, stop_on_failure=True)
    assert (merged.verdict, merged.passed, merged.total) == ("wrong_answer", 0, 3)
    assert [t.index for t in merged.tests] == [0]
    kept = combine([([0, 1], stdio), ([2], call)], 3)
    assert [t.index for t in kept.tests] == [0, 2]


# A program that serves on 127.0.0.1 and talks to itself: what a test that starts a server
# does. No network (the default) refuses the socket; a problem asking for loopback has it.
SELF_SERVER = (
    "import socket, threading\n"
    "srv = socket.socket()\n"
    "srv.bind(('127.0.0.1', 0))\n"
    "srv.listen(1)\n"
    "def serve():\n"
    "    conn, _ = srv.accept()\n"
    "    conn.sendall(conn.recv(16).upper())\n"
    "threading.Thread(target=serve).start()\n"
    "c = socket.create_connection(srv.getsockname(), timeout=5)\n"
    "c.sendall(b'pong')\n"
    "def answer(x):\n"
    "    return c.recv(16).decode() + x\n"
)


@pytest.mark.parametrize("kind", ["stdio", "call", "script"])
def test_a_problem_asking_for_loopback_gets_it_and_others_do_not(judge: Judge, kind: str) -> None:
    if kind == "stdio":
        code, test = SELF_SERVER + "print(answer(input()))\n", TestCase("stdio", "!", "PONG!")
    elif kind == "call":
        code = SELF_SERVER
        test = TestCase(
            "call", options={"fn_name": "answer", "args": ["!"]}, expected_value="PONG!"
        )
    else:
        code, test = SELF_SERVER, TestCase("script", code="assert answer('!') == 'PONG!'\n")
    limits = Limits(time_s=5, memory_mb=256)
    looped = judge.judge(Submission(Problem("lo", [test], limits, network="loopback"), code))
    assert looped.verdict == "accepted", looped
    closed = judge.judge(Submission(Problem("lo", [test], limits), code))
    assert closed.verdict == "runtime_error", closed
    assert "Address family not supported" in closed.tests[0].message  # EAFNOSUPPORT


def test_network_names_the_field() -> None:
    with pytest.raises(ValidationError, match="network"):
        Problem("p", [TestCase("stdio", "", "")], network="internet")  # type: ignore[arg-type]
