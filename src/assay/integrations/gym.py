"""A gymnasium-style environment over agent tasks: ``reset`` / ``step`` with text actions.

>>> env = TaskEnv(tasks=load_tasks("repair.jsonl"))              # doctest: +SKIP
>>> obs, info = env.reset(seed=0)
>>> obs, reward, terminated, truncated, info = env.step("```bash\\ncat solution.py\\n```")

Observations and actions are text (``gymnasium.spaces.Text`` when gymnasium is installed,
and then the class is a real ``gymnasium.Env``); actions are read as
:func:`assay.integrations.agent_env.parse_action` reads them. ``reset`` picks a task
(``options={"task": ...}`` names one, else the seeded generator picks), and closes the
previous episode's session.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from .. import defaults
from ..tasks import AgentTask
from .agent_env import MAX_OBSERVATION, Episode, source_of, task_of

_gym: Any
_Base: Any
try:  # the real base class when gymnasium is installed (extra ``assay[agents]``)
    _gym = importlib.import_module("gymnasium")
    _Base = _gym.Env
except ImportError:  # the same reset/step contract without it
    _gym, _Base = None, object


class TaskEnv(_Base):  # type: ignore[misc]
    """One task per episode, from ``tasks``; ``source`` is a Runner or LocalExecutor
    (default: the shared embedded executor), or ``url`` (and ``token``) an ``assay serve``
    that holds the sessions."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        tasks: Sequence[AgentTask | Mapping[str, Any]],
        source: object = None,
        *,
        gated: bool = False,
        max_steps: int = 30,
        step_timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S,
        url: str | None = None,
        token: str | None = None,
    ) -> None:
        self.tasks = [task_of(t) for t in tasks]
        if not self.tasks:
            raise ValueError("tasks: give at least one task")
        self.source = source_of(source, url, token)
        self.gated, self.max_steps, self.step_timeout_s = gated, max_steps, step_timeout_s
        self.episode: Episode | None = None
        self._rng = random.Random()
        if _gym is not None:
            self.observation_space = _gym.spaces.Text(MAX_OBSERVATION + 200, charset=_CHARSET)
            self.action_space = _gym.spaces.Text(100_000, charset=_CHARSET)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if _gym is not None:
            super().reset(seed=seed)  # seeds gymnasium's np_random, as its checker expects
        elif seed is not None:
            self._rng.seed(seed)
        self.close()
        wanted = (options or {}).get("task")
        if wanted is not None:
            task = next((t for t in self.tasks if t.task_id == wanted), None)
            if task is None:
                raise ValueError(f"options.task: no task {wanted!r}")
        elif _gym is not None:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        else:
            task = self._rng.choice(self.tasks)
        self.episode = Episode(
            self.source,
            task,
            gated=self.gated,
            max_steps=self.max_steps,
            step_timeout_s=self.step_timeout_s,
        )
        return self.episode.prompt, {"task_id": task.task_id}

    def step(
        self, action: str | Mapping[str, Any]
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        out = self.episode.step(action)
        truncated = bool(out.info.get("truncated"))
        return out.observation, out.reward, out.done and not truncated, truncated, out.info

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None


#: Every printable character and whitespace (gymnasium's Text default is alphanumeric).
_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n\t\r"

__all__ = ["TaskEnv"]
