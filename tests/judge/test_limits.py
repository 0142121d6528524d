from __future__ import annotations

from assay import Runner
from assay.judge import Problem, TestCase
from assay.judge.limits import derive_time_limit


def test_time_limit_from_reference(runner: Runner) -> None:
    slow = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4:\n    pass\nprint(input())"
    p = Problem("echo", [TestCase(input="x\n", expected="x\n")], references=[slow])
    derived = derive_time_limit(runner, p)
    assert derived.limits.time_s >= 1.6  # 4 x ~0.4 s
    assert derived.metadata["time_limit_s"] == derived.limits.time_s
    fast = derive_time_limit(
        runner, Problem("e", [TestCase(input="y\n", expected="y\n")], references=["print(input())"])
    )
    assert fast.limits.time_s == 1.0  # the floor


def test_failing_reference_leaves_limits_alone(runner: Runner) -> None:
    p = Problem("bad", [TestCase(input="", expected="1\n")], references=["print(2)"])
    derived = derive_time_limit(runner, p)
    assert (
        derived.limits == p.limits
        and derived.metadata["time_limit_source"] == "reference wrong_answer"
    )


SLOW_CALL = (
    "import time\n"
    "def f(x):\n"
    "    t = time.process_time()\n"
    "    while time.process_time() - t < 0.4:\n"
    "        pass\n"
    "    return x\n"
)


def test_call_tests_are_timed_by_their_run(runner: Runner) -> None:
    # Call tests share one run and report no CPU time of their own: the run's counts.
    test = TestCase(kind="call", options={"fn_name": "f", "args": [1]}, expected_value=1)
    derived = derive_time_limit(runner, Problem("slow-call", [test], references=[SLOW_CALL]))
    assert derived.limits.time_s >= 1.6, derived.metadata
