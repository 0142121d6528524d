"""No reward term can be farmed by repetition: every kind of step, repeated, is paid once.

Each kind of step is done once and then repeated nine more times on the same workspace
(and, for the diagnosis, with the same diagnosis): the ten step rewards sum to what the
first one paid. Without the rule the diagnosis alone paid +0.2 on every verification
(ten after one fix: 3.0 instead of 1.2).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assay import Runner
from assay.sessions.verify import Verifier
from assay.tasks import AgentTask

BROKEN = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BROKEN.replace("a - b", "a + b")
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
PATCH = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)
RIGHT = {"lines": ["calc.py:2"], "files": ["calc.py"], "functions": ["add"]}
PADDED = FIXED + "".join(f"\nX{i} = {i}\n" for i in range(20))
# kind -> (workspace of the step, diagnosis, what the first step pays)
STEPS: dict[str, tuple[dict[str, bytes], object, float]] = {
    "unchanged": ({"calc.py": BROKEN.encode()}, None, 0.0),
    "diagnosis": ({"calc.py": BROKEN.encode()}, RIGHT, 0.2),
    "fix": ({"calc.py": FIXED.encode()}, None, 0.5),
    "fix_with_diagnosis": ({"calc.py": FIXED.encode()}, RIGHT, 0.7),
    "protected_edit": ({"calc.py": BROKEN.encode(), "test_hidden.py": b"x = 1\n"}, None, -1.0),
    "unparseable": ({"calc.py": (BROKEN + "def broken(:\n").encode()}, None, -1.0),
    "oversized_diff": ({"calc.py": PADDED.encode()}, None, 0.5 - 0.1),
}


@pytest.fixture
def verifier_of(runner: Runner) -> Callable[[], tuple[Verifier, Callable[..., object]]]:
    task = AgentTask.from_dict(
        {
            "task_id": "calc",
            "instructions": "fix add",
            "files": {"calc.py": BROKEN},
            "tests": {"test_hidden.py": TESTS},
            "reference_patch": PATCH,
        }
    )

    def make() -> tuple[Verifier, Callable[..., object]]:
        return Verifier(task), runner.execute

    return make


@pytest.mark.parametrize("kind", sorted(STEPS))
def test_repeating_a_step_pays_it_once(verifier_of, kind: str) -> None:  # type: ignore[no-untyped-def]
    verifier, execute = verifier_of()
    workspace, diagnosis, first = STEPS[kind]
    rewards = [
        verifier.verify_snapshot(execute, workspace, diagnosis).step_reward for _ in range(10)
    ]
    assert rewards[0] == pytest.approx(first)
    assert rewards[1:] == [0.0] * 9
    assert sum(r for r in rewards if r is not None) == pytest.approx(first)


def test_the_diagnosis_pays_at_most_its_weight_in_an_episode(verifier_of) -> None:  # type: ignore[no-untyped-def]
    """Improving the diagnosis pays the improvement; a worse one and the best again pay 0."""
    verifier, execute = verifier_of()
    ws = {"calc.py": BROKEN.encode()}
    scores = [
        verifier.verify_snapshot(execute, ws, diag).terms["diagnosis"]
        for diag in (
            {"files": ["calc.py"], "functions": ["mul"]},
            RIGHT,
            {"functions": ["mul"]},
            RIGHT,
        )
    ]
    assert scores == [pytest.approx(0.5), pytest.approx(0.5), 0.0, 0.0]


def test_breaking_and_fixing_again_is_a_loss(verifier_of) -> None:  # type: ignore[no-untyped-def]
    verifier, execute = verifier_of()
    fixed, broken = {"calc.py": FIXED.encode()}, {"calc.py": BROKEN.encode()}
    first = verifier.verify_snapshot(execute, fixed).step_reward
    loops = [verifier.verify_snapshot(execute, ws).step_reward for ws in (broken, fixed) * 5]
    assert first == pytest.approx(0.5)
    assert sum(r for r in loops if r is not None) == pytest.approx(5 * -0.25)


def test_undoing_and_redoing_a_protected_edit_is_charged_each_time(verifier_of) -> None:  # type: ignore[no-untyped-def]
    verifier, execute = verifier_of()
    clean = {"calc.py": BROKEN.encode()}
    edited = {**clean, "test_hidden.py": b"x = 1\n"}
    terms = [verifier.verify_snapshot(execute, ws).terms["protected"] for ws in (edited, clean) * 3]
    assert terms == [1.0, 0.0] * 3
