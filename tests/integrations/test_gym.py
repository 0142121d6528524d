"""The gymnasium environment, checked by gymnasium's own env checker where installed."""

from __future__ import annotations

import pytest

from assay import Runner
from assay.integrations.gym import TaskEnv

from ._agent_task import FIX, TASK


def test_reset_step_close(runner: Runner) -> None:
    env = TaskEnv([TASK], runner)
    obs, info = env.reset(seed=1)
    assert info == {"task_id": "calc"} and "fix it" in obs
    obs, reward, terminated, truncated, info = env.step(FIX)
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = env.step("<submit>")
    assert (reward, terminated, truncated) == (1.0, True, False)
    with pytest.raises(ValueError, match=r"options\.task"):
        env.reset(options={"task": "nope"})
    env.close()


def test_is_a_real_gymnasium_env(runner: Runner) -> None:
    gym = pytest.importorskip("gymnasium", reason="pip install 'assay[agents]'")
    from gymnasium.utils.env_checker import check_env

    env = TaskEnv([TASK], runner, max_steps=3)
    assert isinstance(env, gym.Env)
    check_env(env, skip_render_check=True)
    env.close()
