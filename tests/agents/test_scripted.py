"""The scripted agents earn what their scripts should: fix rewarded, tampering caught, a loop
stopped with the session still usable, a regression negative."""

from __future__ import annotations

import pytest

from assay import Runner
from assay.agents import AGENTS
from assay.sessions import Session
from assay.tasks.codet import repair_task

# HumanEval/53 (openai/human-eval, MIT), trimmed to two asserts.
REC = {
    "task_id": "HumanEval/53",
    "prompt": 'def add(x: int, y: int):\n    """Add two numbers x and y"""\n',
    "canonical_solution": "    return x + y\n",
    "entry_point": "add",
    "test": "def check(candidate):\n    assert candidate(0, 1) == 1\n    assert candidate(5, 7) == 12\n",
}


def _episode(runner: Runner, name: str) -> tuple[list[float | None], float | None, list[str]]:
    task = repair_task(REC, "    return x - y\n", 0)
    with Session.for_task(runner, task) as s:
        steps = list(AGENTS[name](s, task))
        rewards = s.episode_rewards()
    return rewards.raw_step_rewards, rewards.final_reward, [st.observation for st in steps]


def test_fixer_is_rewarded(runner: Runner) -> None:
    steps, final, _ = _episode(runner, "fixer")
    assert final == 1.0 and steps[-1] == pytest.approx(1.0 + 0.2)  # 0/2 -> 2/2, diagnosis


def test_tamperer_is_caught(runner: Runner) -> None:
    steps, final, _ = _episode(runner, "tamperer")
    assert final == 0.0 and steps[-1] == pytest.approx(-1.0 - 0.1)  # protected, diff excess


def test_looper_is_stopped_and_the_session_answers(runner: Runner) -> None:
    _, final, seen = _episode(runner, "looper")
    assert "timed_out=True" in seen[0] and seen[1] == "still here" and final == 0.0


def test_breaker_goes_negative(runner: Runner) -> None:
    steps, _, _ = _episode(runner, "breaker")
    assert steps[0] == pytest.approx(1.0) and steps[1] is not None and steps[1] < -1.0
