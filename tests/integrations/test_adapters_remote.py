"""The agent adapters in ``url=`` mode: each drives a whole episode whose session is held by
a real ``assay serve`` (a subprocess), seen from the server's side too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from assay.client import RemoteSession
from assay.integrations.agent_env import Episode, source_of
from assay.integrations.gym import TaskEnv
from assay.integrations.verl_tool import AssayAgentTool
from serve_helpers import served

from ._agent_task import FIX, TASK

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    with served("--slots", "2", "--records", "off") as (url, _pid):
        yield url


def _state(url: str, session_id: str) -> int:
    return httpx.get(f"{url}/v1/sessions/{session_id}", timeout=10).status_code


def test_episode_on_a_session_client(serve_url: str) -> None:
    with Episode(source_of(None, serve_url), TASK) as episode:
        assert isinstance(episode.session, RemoteSession)
        assert _state(serve_url, episode.session.id) == 200  # held by the server
        assert episode.step(FIX).reward == 0.0
        final = episode.step("<submit>")
        assert (final.done, final.reward, final.info["valid"]) == (True, 1.0, True)
        assert episode.rewards().final_reward == 1.0
    assert _state(serve_url, episode.session.id) == 410


def test_gym_env_with_url(serve_url: str) -> None:
    env = TaskEnv([TASK], url=serve_url)
    obs, info = env.reset(seed=3)
    assert info == {"task_id": "calc"} and "fix it" in obs
    assert env.episode is not None
    assert _state(serve_url, env.episode.session.id) == 200
    _obs, reward, terminated, truncated, _info = env.step(FIX)
    assert (reward, terminated, truncated) == (0.0, False, False)
    _obs, reward, terminated, truncated, _info = env.step("<submit>")
    assert (reward, terminated, truncated) == (1.0, True, False)
    env.close()


def test_skyrl_env_with_url(serve_url: str) -> None:
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="pip install 'assay[agents]'")
    from skyrl_gym.envs import register

    register(id="assay_task_remote", entry_point="assay.integrations.skyrl:AssayTaskEnv")
    env = skyrl_gym.make(
        "assay_task_remote",
        env_config={"gated": True, "max_turns": 5, "url": serve_url},
        extras={"task": TASK},
    )
    env.init([{"role": "system", "content": "you fix code"}])
    assert isinstance(env.episode.session, RemoteSession)
    env.step(FIX)
    out = env.step('<verify>{"files": ["calc.py"]}</verify>')
    assert out["reward"] == pytest.approx(0.5 + 0.2) and out["metadata"]["valid"]
    out = env.step("<submit>")
    assert out["done"] and out["reward"] == 1.0 and out["metadata"]["episode"]["paid"]
    env.close()


def test_verl_tool_with_url(serve_url: str) -> None:
    tool = AssayAgentTool({"type": "native", "url": serve_url})

    async def trajectory() -> str:
        iid, first = await tool.create(create_kwargs={"task": TASK, "episode_id": "traj-9"})
        assert "fix it" in first.text
        session = tool._episode(iid).session
        assert isinstance(session, RemoteSession) and session.episode_id == "traj-9"
        _before, reward, metrics = await tool.execute(iid, {"verify": True})
        assert (reward, metrics["passed"]) == (0.0, 1)  # add(0, 0) passes already
        fix = {"command": "sed -i 's/a - b/a + b/' calc.py", "verify": True}
        after, reward, metrics = await tool.execute(iid, fix)
        assert "2/2" in after.text and metrics["valid"] and reward > 0
        assert await tool.calc_reward(iid) == 1.0
        steps = tool.final_rewards(iid)["step_rewards"]
        assert len(steps) == 3 and steps[1] == reward
        await tool.close_episode(iid)
        return session.id

    session_id = asyncio.run(trajectory())
    assert _state(serve_url, session_id) == 410
