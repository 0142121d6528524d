"""Every job kind chooses where it runs with one ``Placement`` (image, isolation tier):
a judged problem and a session can run on the gVisor tier as a plain run can (before,
only plain runs could), and a bad tier is refused naming the field, at the edge."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from assay import Judge, Limits, Runner, Session
from assay.errors import ValidationError
from assay.judge import Problem, Submission, TestCase
from assay.sandbox.gvisor import available
from assay.types import Placement

OK, WHY = available()
RELEASE = "import os; print(os.uname().release)"  # gVisor's kernel says another release


def test_a_placement_is_checked_once_where_it_is_made() -> None:
    with pytest.raises(ValidationError) as err:
        Placement(None, "firecracker")  # type: ignore[arg-type]
    assert err.value.field == "isolation"
    with pytest.raises(ValidationError) as err:
        Problem("p", [TestCase(input="", expected="")], isolation="vm")  # type: ignore[arg-type]
    assert err.value.field == "isolation"
    with pytest.raises(ValidationError) as err:
        Placement("", None)
    assert err.value.field == "image"
    problem = Problem("p", [TestCase(input="", expected="")], image="py39", isolation="gvisor")
    assert problem.placement == Placement("py39", "gvisor")


@pytest.mark.slow
@pytest.mark.skipif(not OK, reason=WHY)
def test_a_problem_and_a_session_run_on_the_tier_they_name(runner: Runner) -> None:
    host = os.uname().release
    problem = Problem("release", [TestCase(input="", expected=host)], limits=Limits(time_s=5))
    judge = Judge(runner)
    assert runner.isolation == "default"
    assert judge.judge(Submission(problem, RELEASE)).verdict == "accepted"
    on_gvisor = judge.judge(Submission(replace(problem, isolation="gvisor"), RELEASE))
    assert on_gvisor.verdict == "wrong_answer", on_gvisor  # another kernel answered
    with Session(runner, isolation="gvisor") as s:
        step = s.exec("uname -r")
        assert step.exit_code == 0 and step.stdout.strip() not in (b"", host.encode()), step
        assert s.info()["isolation"] == "gvisor"
    with Session(runner) as s:
        assert s.exec("uname -r").stdout.strip() == host.encode()
