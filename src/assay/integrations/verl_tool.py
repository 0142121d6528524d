"""veRL's multi-turn ``BaseTool`` over agent sessions.

``create`` opens a session on the row's task, ``execute`` runs one step and returns its step
reward, ``calc_reward`` runs the final verification, ``release`` closes the session. Declare
it in a tool-config yaml (``examples/verl_agent_tool.yaml``)::

    tools:
      - class_name: assay.integrations.verl_tool.AssayAgentTool
        config: {type: native, gated: false, step_timeout_s: 30, url: "http://sandbox:8080"}
        tool_schema: ...           # or leave it out: AssayAgentTool.SCHEMA is used

and give each row ``tools_kwargs: {assay_workspace: {create_kwargs: {task: {...}}}}`` (the
native task format, or that row as JSON text: see ``examples/verl_agent_dataset.py``). Tool calls take ``{"command": "..."}`` (a shell step), ``{"verify": true,
"diagnosis": "<JSON>"}`` or both. A verification that failed on our side scores 0.0 with
``metrics["valid"] = False`` (veRL needs a float; mask it), never a silent 0.

With ``url`` (and ``token``, or ``$ASSAY_API_TOKEN``) in the config the sessions are held by
that ``assay serve`` (or the Ray cluster behind it): rollout workers on GPU nodes need no
root, namespaces or cgroups. Without it they run in this process's embedded executor.

veRL's own agent loop (``tool_agent_loop``, 0.9) creates and releases a tool instance around
*every* call; the session of a trajectory then lives across calls when ``create_kwargs``
names an ``episode_id`` (one session per id, closed by ``release`` only when
``create_kwargs["close_on_release"]`` is true, else by ``close_episode`` or the session's
idle TTL). veRL's SGLang rollout creates once per trajectory and needs nothing of this.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import uuid
from typing import Any

from .. import defaults
from ..sessions import SessionLimits
from .agent_env import Episode, describe, source_of

_BaseTool: Any
_ToolResponse: Any
_Schema: Any
try:  # veRL's classes when veRL is installed
    _BaseTool = importlib.import_module("verl.tools.base_tool").BaseTool
    _schemas = importlib.import_module("verl.tools.schemas")
    _ToolResponse, _Schema = _schemas.ToolResponse, _schemas.OpenAIFunctionToolSchema
except ImportError:  # the same interface without veRL (its documented shapes)
    _BaseTool, _Schema = object, None

    class _ToolResponse:  # type: ignore[no-redef]
        def __init__(self, text: str | None = None) -> None:
            self.text = text


class AssayAgentTool(_BaseTool):  # type: ignore[misc]
    """One session per trajectory; see the module docstring."""

    SCHEMA: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": "assay_workspace",
            "description": (
                "Work in the task's workspace (/work): run a shell command, and/or verify the "
                "workspace against the task's hidden tests (optionally stating a diagnosis: "
                'JSON like {"lines": ["solution.py:3"]}).'
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "a bash command run in /work"},
                    "verify": {"type": "boolean", "description": "run the hidden tests now"},
                    "diagnosis": {"type": "string", "description": "JSON: what you blame"},
                },
                "required": [],
            },
        },
    }

    def __init__(self, config: dict[str, Any], tool_schema: Any = None) -> None:
        if tool_schema is None and _Schema is not None:
            tool_schema = _Schema.model_validate(self.SCHEMA)
        if _BaseTool is not object:
            super().__init__(config, tool_schema)
        else:
            self.config, self.tool_schema, self.name = config, tool_schema, "assay_workspace"
        self.source = source_of(
            config.get("source"),
            config.get("url"),
            config.get("token") or os.environ.get("ASSAY_API_TOKEN"),
        )
        self.gated = bool(config.get("gated", False))
        self.step_timeout_s = float(config.get("step_timeout_s", defaults.SESSION_STEP_TIMEOUT_S))
        limits = config.get("limits")
        self.limits = SessionLimits(**limits) if isinstance(limits, dict) else None
        self._episodes: dict[str, Episode] = {}
        self._close_on_release: dict[str, bool] = {}
        self._lock = threading.Lock()

    def get_openai_tool_schema(self) -> Any:
        return self.tool_schema

    def _episode(self, instance_id: str) -> Episode:
        found = self._episodes.get(instance_id)
        if found is None:
            raise KeyError(f"no assay episode {instance_id!r}: call create first")
        return found

    async def create(
        self,
        instance_id: str | None = None,
        create_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> tuple[str, Any]:
        """Open the trajectory's session (SGLang rollout: ``create(id, task=...)``; agent
        loop: ``create(create_kwargs={"task": ..., "episode_id": ...})``)."""
        import asyncio

        args = {**kwargs, **(create_kwargs or {})}
        if "task" not in args:
            raise ValueError("create_kwargs.task: give the agent task (native format)")
        if isinstance(args["task"], str):
            # A dataset's row as JSON text: Parquet would turn each row's file names into
            # one struct's columns, nulls where a row lacks a file.
            args["task"] = json.loads(args["task"])
        key = str(args.get("episode_id") or instance_id or uuid.uuid4().hex)
        with self._lock:
            existing = self._episodes.get(key)
        if existing is not None:
            return key, _ToolResponse(text=existing.prompt)
        episode = await asyncio.to_thread(
            Episode,
            self.source,
            args["task"],
            gated=self.gated,
            max_steps=1_000_000,  # the trainer decides when a trajectory ends
            step_timeout_s=self.step_timeout_s,
            limits=self.limits,
            episode_id=key,  # the trajectory's records carry its id
        )
        with self._lock:
            self._episodes[key] = episode
            self._close_on_release[key] = bool(
                args.get("close_on_release", "episode_id" not in args)
            )
        return key, _ToolResponse(text=episode.prompt)

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """One step: ``(ToolResponse, step reward, metrics)``."""
        import asyncio

        episode = self._episode(instance_id)
        texts: list[str] = []
        reward, metrics = 0.0, {"valid": True}
        if parameters.get("command"):
            out = await asyncio.to_thread(episode.step, {"command": parameters["command"]})
            texts.append(out.observation)
        if parameters.get("verify"):
            diagnosis = parameters.get("diagnosis")
            if isinstance(diagnosis, str) and diagnosis.strip():
                try:
                    diagnosis = json.loads(diagnosis)
                except ValueError:
                    texts.append("the diagnosis is not JSON; verified without it")
                    diagnosis = None
            v = await asyncio.to_thread(episode.session.verify, diagnosis or None)
            texts.append(describe(v))
            reward = v.step_reward if v.step_reward is not None else 0.0
            metrics = {"valid": v.step_reward is not None, **v.terms, "passed": v.passed}
        if not texts:
            texts.append('give "command" and/or "verify": true')
        return _ToolResponse(text="\n".join(texts)), reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The final verification's reward (``passed / total``; 0.0 if it failed on our
        side: see ``final_rewards`` for ``None`` and the gated step rewards)."""
        import asyncio

        v = await asyncio.to_thread(self._episode(instance_id).session.verify)
        return v.reward if v.reward is not None else 0.0

    def final_rewards(self, instance_id: str) -> dict[str, Any]:
        """The episode's final reward and its step rewards, for assigning to turns."""
        rewards: dict[str, Any] = self._episode(instance_id).rewards().to_dict()
        return rewards

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        if self._close_on_release.get(instance_id, True):
            await self.close_episode(instance_id)

    async def close_episode(self, instance_id: str) -> None:
        import asyncio

        with self._lock:
            episode = self._episodes.pop(instance_id, None)
            self._close_on_release.pop(instance_id, None)
        if episode is not None:
            await asyncio.to_thread(episode.close)


__all__ = ["AssayAgentTool"]
