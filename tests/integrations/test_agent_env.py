"""The episode behind the adapters: action parsing, steps, verification, submit, truncation."""

from __future__ import annotations

import pytest

from assay import Runner
from assay.errors import ValidationError
from assay.integrations.agent_env import Episode, parse_action

from ._agent_task import FIX, TASK


def test_parse_action() -> None:
    assert parse_action("```bash\nls\n```") == {"command": "ls"}
    assert parse_action("think\n```sh\na\n```\n```bash\nb\n```") == {"command": "b"}
    assert parse_action('<verify>{"lines": ["calc.py:2"]}</verify>') == {
        "verify": True,
        "diagnosis": {"lines": ["calc.py:2"]},
    }
    assert parse_action("<verify/>") == {"verify": True, "diagnosis": None}
    assert parse_action("done <submit>") == {"submit": True}
    assert parse_action('{"read": "calc.py"}') == {"read": "calc.py"}
    assert "error" in parse_action("just prose")
    assert "error" in parse_action("<verify>not json</verify>")


def test_episode_fix_then_submit(runner: Runner) -> None:
    with Episode(runner, TASK) as ep:
        assert "fix it" in ep.prompt and "calc.py" in ep.prompt
        out = ep.step("```bash\ncat calc.py\n```")
        assert "a - b" in out.observation and out.reward == 0.0 and not out.done
        out = ep.step("<verify>")
        assert "1/2 passed" in out.observation and out.reward == 0.0
        ep.step(FIX)
        out = ep.step('<verify>{"lines": ["calc.py:2"]}</verify>')
        assert out.reward == pytest.approx(0.5 + 0.2) and "newly passing" in out.observation
        out = ep.step("<submit>")
        assert out.done and out.reward == 1.0 and out.info["episode"]["paid"]
        with pytest.raises(ValidationError):
            ep.step("<submit>")


def test_episode_truncates_at_max_steps(runner: Runner) -> None:
    with Episode(runner, TASK, max_steps=2) as ep:
        assert not ep.step("prose").done
        out = ep.step("```bash\ntrue\n```")
        assert out.done and out.info["truncated"] and out.reward == 0.5


def test_a_step_that_kills_the_session_ends_the_episode(runner: Runner) -> None:
    with Episode(runner, TASK) as ep:
        out = ep.step("```bash\nkill -9 -1\n```")
        if not out.done:  # the agent may answer before it dies: the next step finds it gone
            out = ep.step("```bash\ntrue\n```")
        assert out.done and out.reward == 0.0 and out.info["kind"] == "ended"
        assert out.info["valid"] and out.info["reason"] == "crashed"
