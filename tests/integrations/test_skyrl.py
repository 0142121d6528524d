"""The SkyRL-gym environment, against the real ``skyrl_gym`` package."""

from __future__ import annotations

import pytest

from assay import Runner

from ._agent_task import FIX, TASK

skyrl_gym = pytest.importorskip("skyrl_gym", reason="pip install 'assay[agents]'")


def test_init_step_close_through_skyrl_registry(runner: Runner) -> None:
    from skyrl_gym.envs import register
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    register(id="assay_task_test", entry_point="assay.integrations.skyrl:AssayTaskEnv")
    env = skyrl_gym.make(
        "assay_task_test",
        env_config={"gated": True, "max_turns": 5},
        extras={"task": TASK, "source": runner},
    )
    assert isinstance(env, BaseTextEnv)
    prompt, _meta = env.init([{"role": "system", "content": "you fix code"}])
    assert prompt[0]["role"] == "system" and "fix it" in prompt[-1]["content"]
    out = env.step(FIX)
    assert out["done"] is False and out["observations"][0]["role"] == "user"
    out = env.step('<verify>{"files": ["calc.py"]}</verify>')
    assert out["reward"] == pytest.approx(0.5 + 0.2) and out["metadata"]["valid"]
    out = env.step("<submit>")
    assert out["done"] and out["reward"] == 1.0 and out["metadata"]["episode"]["paid"]
    assert env.get_metrics()["final_reward"] == 1.0
    env.close()


def test_missing_task_is_named() -> None:
    from assay.integrations.skyrl import AssayTaskEnv

    with pytest.raises(ValueError, match=r"extras\.task"):
        AssayTaskEnv(extras={})
