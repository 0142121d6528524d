"""A SkyRL-gym environment over agent tasks: ``init`` / ``step`` / ``close``.

Register it with SkyRL-gym and give each dataset row the task in ``extras`` (the native
format, as ``extras["task"]``, or as ``extras["reward_spec"]["ground_truth"]``)::

    from skyrl_gym.envs import register
    register(id="assay_task", entry_point="assay.integrations.skyrl:AssayTaskEnv")

``step`` takes the model's text (a ```bash block, ``<verify>``, ``<submit>``: see
:mod:`assay.integrations.agent_env`) and returns ``BaseTextEnvStepOutput``: the observation
as a user message, the step reward (the final reward on the last step), ``done``, and the
verification in ``metadata``. ``env_config`` may set ``gated``, ``max_turns``,
``step_timeout_s``, and ``url`` (with ``token``, or ``$ASSAY_API_TOKEN``): the sessions are
then held by that ``assay serve``, not by this process.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from .. import defaults
from .agent_env import Episode, source_of

_Base: Any
_Output: Any
try:  # the real base class when skyrl-gym is installed (extra ``assay[agents]``)
    _skyrl = importlib.import_module("skyrl_gym.envs.base_text_env")
    _Base, _Output = _skyrl.BaseTextEnv, _skyrl.BaseTextEnvStepOutput
except ImportError:
    _Base, _Output = object, dict


def _config(env_config: Any, key: str, default: Any) -> Any:
    if env_config is None:
        return default
    if isinstance(env_config, Mapping):
        return env_config.get(key, default)
    return getattr(env_config, key, default)


class AssayTaskEnv(_Base):  # type: ignore[misc]
    """One agent task per environment instance (SkyRL makes one per trajectory)."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        task = extras.get("task") or (extras.get("reward_spec") or {}).get("ground_truth")
        if not isinstance(task, Mapping):
            raise ValueError("extras.task: give the agent task (native format) for this row")
        self.max_turns = int(_config(env_config, "max_turns", 30))
        self.turns = 0
        self._task = task
        self._source = source_of(
            extras.get("source") or _config(env_config, "source", None),
            _config(env_config, "url", None),
            _config(env_config, "token", None) or os.environ.get("ASSAY_API_TOKEN"),
        )
        self._gated = bool(_config(env_config, "gated", False))
        self._timeout = float(
            _config(env_config, "step_timeout_s", defaults.SESSION_STEP_TIMEOUT_S)
        )
        self.episode: Episode | None = None

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        self.episode = Episode(
            self._source,
            self._task,
            gated=self._gated,
            max_steps=self.max_turns,
            step_timeout_s=self._timeout,
        )
        first = [*prompt, {"role": "user", "content": self.episode.prompt}]
        return first, {"task_id": self.episode.task.task_id}

    def step(self, action: str) -> Any:
        if self.episode is None:
            raise RuntimeError("call init() before step()")
        self.turns += 1
        out = self.episode.step(action)
        return _Output(
            observations=[] if out.done else [{"role": "user", "content": out.observation}],
            reward=out.reward,
            done=out.done,
            metadata=out.info,
            postprocessed_action=action,
        )

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None

    def get_metrics(self) -> dict[str, Any]:
        if self.episode is None:
            return {}
        ep = self.episode.rewards()
        return {
            "final_reward": ep.final_reward if ep.final_reward is not None else 0.0,
            "verifications": len(ep.step_rewards),
            "turns": self.turns,
        }


__all__ = ["AssayTaskEnv"]
