"""Session.verify: hidden tests on a snapshot, newly passing/failing, step rewards, gating,
forks inheriting history, infrastructure failures as ``None``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay import Runner
from assay.errors import ValidationError
from assay.sandbox import RunRequest
from assay.sessions import Session
from assay.sessions.step_reward import RewardWeights
from assay.tasks import AgentTask
from assay.types import ExecResult

BROKEN = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BROKEN.replace("a - b", "a + b")
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_zero():\n    assert add(0, 0) == 0\n\n\ndef test_mul():\n"
    "    assert mul(2, 3) == 6\n"
)
PATCH = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)


def make_task(**extra: object) -> AgentTask:
    row = {
        "task_id": "calc",
        "instructions": "fix add",
        "files": {"calc.py": BROKEN},
        "tests": {"test_hidden.py": TESTS},
        "reference_patch": PATCH,
        **extra,
    }
    return AgentTask.from_dict(row)


@pytest.fixture
def session(runner: Runner) -> Iterator[Session]:
    with Session.for_task(runner, make_task()) as s:
        yield s


def test_first_verify_is_against_the_task_workspace(session: Session) -> None:
    v = session.verify()
    assert (v.passed, v.total, v.verdict) == (2, 3, "failed")
    assert v.newly_passing == v.newly_failing == []
    assert v.tests["test_hidden.py::test_add"] == "failed"
    assert v.step_reward == 0.0 and v.reward == pytest.approx(2 / 3)
    assert "test_hidden.py" not in {e["name"] for e in session.list_files()}  # never inside


def test_a_fix_raises_the_reward(session: Session) -> None:
    session.write_file("calc.py", FIXED)
    v = session.verify()
    assert (v.passed, v.total, v.verdict) == (3, 3, "accepted")
    assert v.newly_passing == ["test_hidden.py::test_add"]
    assert v.step_reward == pytest.approx(1 / 3)  # pass_delta weight 1.0
    assert v.diff_lines == 2 and v.terms["diff_excess"] == 0.0


def test_a_regression_lowers_it_more_than_a_fix_raises_it(session: Session) -> None:
    session.write_file("calc.py", FIXED)
    session.verify()
    session.write_file("calc.py", FIXED.replace("a * b", "a ** b"))
    v = session.verify()
    assert v.newly_failing == ["test_hidden.py::test_mul"]
    assert v.terms["diff_excess"] == 1.0  # 4 changed lines against the reference's 2
    assert v.step_reward == pytest.approx(-1 / 3 - 0.5 / 3 - 0.1)
    assert v.reward == pytest.approx(2 / 3)


def test_unparseable_and_oversized_diffs_cost(session: Session) -> None:
    session.write_file("calc.py", BROKEN + "def broken(:\n")
    v = session.verify()
    assert v.unparseable == ["calc.py"] and v.terms["unparseable"] == 1.0
    assert v.step_reward is not None and v.step_reward < 0
    session.write_file("calc.py", FIXED + "".join(f"\nX{i} = {i}\n" for i in range(20)))
    v = session.verify()
    assert v.passed == 3 and v.terms["diff_excess"] == 1.0
    assert v.step_reward == pytest.approx(1.0 - 0.1)  # from 0 of 3 (it did not import)


def test_diagnosis_rewards_blaming_the_changed_lines(session: Session) -> None:
    right = session.verify(diagnosis={"lines": ["calc.py:2"]})
    wrong = session.verify(diagnosis={"lines": {"calc.py": [6]}})
    named = session.verify(diagnosis={"files": ["calc.py"], "functions": ["add"]})
    other = session.verify(diagnosis={"functions": ["mul"]})
    assert right.diagnosis_score == 1.0 and right.step_reward == pytest.approx(0.2)
    assert wrong.diagnosis_score == 0.0 and wrong.step_reward == 0.0
    assert named.diagnosis_score == 1.0
    assert other.diagnosis_score == 0.0
    with pytest.raises(ValidationError, match=r"diagnosis\.lines"):
        session.verify(diagnosis={"lines": ["calc.py:x"]})
    with pytest.raises(ValidationError, match=r"diagnosis\.blame"):
        session.verify(diagnosis={"blame": []})


def test_fork_inherits_history(session: Session) -> None:
    session.write_file("calc.py", FIXED)
    session.verify()
    child = session.fork()
    try:
        v = child.verify()
        assert v.newly_passing == [] and v.step_reward == 0.0  # the parent already fixed it
        child.write_file("calc.py", BROKEN)
        assert child.verify().newly_failing == ["test_hidden.py::test_add"]
        assert len(child.episode_rewards().step_rewards) == 3
        assert len(session.episode_rewards().step_rewards) == 1  # the parent's is its own
    finally:
        child.close()


def test_gated_pays_step_rewards_only_when_the_episode_passes(runner: Runner) -> None:
    with Session.for_task(runner, make_task(), gated=True) as s:
        s.write_file("calc.py", BROKEN.replace("a * b", "a + b"))
        s.verify()
        s.write_file("calc.py", FIXED)
        s.verify()  # add fixed, mul back
        ep = s.episode_rewards()
        assert ep.paid and ep.step_rewards == ep.raw_step_rewards and ep.final_reward == 1.0
        s.write_file("calc.py", BROKEN)
        s.verify()
        ep = s.episode_rewards()
        assert not ep.paid and ep.step_rewards == [0.0, 0.0, 0.0]
        assert ep.raw_step_rewards[1] == pytest.approx(2 / 3)
    with Session.for_task(runner, make_task()) as s:  # ungated: paid whatever the outcome
        s.write_file("calc.py", FIXED)
        s.verify()
        s.write_file("calc.py", BROKEN)
        s.verify()
        ep = s.episode_rewards()
        assert ep.paid and ep.step_rewards == pytest.approx([1 / 3, -1 / 3 - 0.5 / 3])


def test_a_failed_sandbox_gives_none_never_zero(runner: Runner) -> None:
    calls = {"n": 0}

    def flaky(req: RunRequest) -> ExecResult:
        calls["n"] += 1
        if calls["n"] >= 3:  # the baseline and the first verification work
            return ExecResult(status="sandbox_error", stderr=b"supervisor lost")
        return runner.execute(req)

    with Session.for_task(runner, make_task(), execute=flaky) as s:
        assert s.verify().reward is not None
        v = s.verify()
        assert v.verdict == "sandbox_error" and v.reward is None and v.step_reward is None
        assert "supervisor lost" in v.reason
        ep = s.episode_rewards()
        assert ep.step_rewards[-1] is None and ep.final_reward is None


def test_a_failed_baseline_gives_none(runner: Runner) -> None:
    def broken(req: RunRequest) -> ExecResult:
        raise OSError("no slot")

    with Session.for_task(runner, make_task(), execute=broken) as s:
        v = s.verify()
        assert v.verdict == "sandbox_error" and v.reward is None and v.step_reward is None


def test_pytest_features_and_node_ids(runner: Runner) -> None:
    tests = (
        "import pytest\nfrom calc import add\n\n\n@pytest.mark.parametrize('a', [1, 2])\n"
        "def test_param(a):\n    assert add(a, 0) == a\n\n\nclass TestAdd:\n"
        "    def test_one(self):\n        assert add(1, 1) == 2\n\n\n"
        "def test_raises():\n    with pytest.raises(TypeError):\n        add(1, 'x')\n"
    )
    task = make_task(tests={"tests/test_more.py": tests})
    with Session.for_task(runner, task) as s:
        v = s.verify()
        assert set(v.tests) == {
            "tests/test_more.py::test_param[1]",
            "tests/test_more.py::test_param[2]",
            "tests/test_more.py::TestAdd::test_one",
            "tests/test_more.py::test_raises",
        }
        assert v.passed == 3  # a - 0 == a; add(1, "x") raises TypeError either way
        s.write_file("calc.py", FIXED)
        assert s.verify().passed == 4


def test_test_command(runner: Runner) -> None:
    task = make_task(tests={}, test_command="python3 -c 'import calc; assert calc.add(1, 1) == 2'")
    with Session.for_task(runner, task) as s:
        assert (s.verify().passed, s.verify().total) == (0, 1)
        s.write_file("calc.py", FIXED)
        v = s.verify()
        assert v.passed == 1 and v.newly_passing == ["test_command"]


def test_no_task_is_a_clear_error(runner: Runner) -> None:
    with Session(runner) as s, pytest.raises(ValidationError, match="task"):
        s.verify()


def test_weights_are_documented_defaults() -> None:
    assert RewardWeights().to_dict() == {
        "pass_delta": 1.0,
        "regression": 0.5,
        "protected": 1.0,
        "unparseable": 0.25,
        "diff_excess": 0.1,
        "diagnosis": 0.2,
    }


def test_async_session_verifies(runner: Runner) -> None:
    import asyncio

    from assay.sessions import AsyncSession

    async def go() -> None:
        s = AsyncSession(Session.for_task(runner, make_task()))
        try:
            await s.write_file("calc.py", FIXED)
            v = await s.verify({"functions": ["add"]})
            assert v.verdict == "accepted" and v.diagnosis_score == 1.0
        finally:
            await s.close()

    asyncio.run(go())


@pytest.mark.usefixtures("descriptors_past_1024")
def test_verifies_in_a_process_whose_descriptors_pass_1024(runner: Runner) -> None:
    with Session.for_task(runner, make_task()) as s:
        v = s.verify()
        assert (v.passed, v.total, v.verdict) == (2, 3, "failed")


CLI = FIXED + (
    "\n\nif __name__ == '__main__':\n    import sys\n\n"
    "    sys.exit(0 if add(2, 3) == 5 else 1)  # a CLI of the code under test: its own exit\n"
)
CHECK = """\
import atexit
import subprocess
import sys
import threading
import unittest

from calc import add

done = []
# The code under test run as a program: its SystemExit is its own process's business.
assert subprocess.run([sys.executable, "calc.py"]).returncode == 0
t = threading.Thread(target=lambda: done.append(add(1, 1)))
t.start()
atexit.register(lambda: print("exit functions ran", done))
if add(2, 3) != 5:
    sys.exit(1)


class T(unittest.TestCase):
    def test_cli_exit_is_caught(self):
        with self.assertRaises(SystemExit):
            exec(open("calc.py").read(), {"__name__": "__main__"})


unittest.main()  # exits through the standard library: the script's own exit
"""


@pytest.mark.parametrize("command", ["python3 check.py", "python check.py --verbose"])
def test_a_script_command_that_exits_on_its_own_is_judged_by_its_status(
    runner: Runner, command: str
) -> None:
    """The early-exit rule does not catch honest scripts: one whose program under test is
    a CLI ending in ``sys.exit``, with a thread, exit functions and ``unittest.main()``."""
    task = make_task(files={"calc.py": CLI.replace("a + b", "a - b")}, tests={"check.py": CHECK})
    task = AgentTask.from_dict({**task.to_dict(), "test_command": command})
    with Session.for_task(runner, task) as s:
        assert s.verify().verdict == "failed"
        s.write_file("calc.py", CLI)
        v = s.verify()
        assert (v.verdict, v.reward) == ("accepted", 1.0), v.reason
