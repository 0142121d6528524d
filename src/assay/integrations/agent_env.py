"""The episode behind the trainer adapters (veRL tool, SkyRL-gym env, gymnasium env).

An :class:`Episode` is one session on one task. It takes an agent's action, runs it, and
answers with an observation, a reward and whether the episode is over. Actions are either
structured (``{"command": ...}``, ``{"write": path, "content": ...}``, ``{"read": path}``,
``{"verify": true, "diagnosis": {...}}``, ``{"submit": true}``) or model text, read as:

- a fenced ``bash``/``sh`` block: a shell command in the workspace;
- ``<verify>`` (optionally ``<verify>{"lines": ["solution.py:3"]}</verify>``): run the hidden
  tests now, with that diagnosis;
- ``<submit>``: the final verification; the episode ends.

The reward of a step is its verification's step reward (0.0 for steps that do not verify);
the final step's reward is the episode's final reward (in gated mode the step rewards are
paid, or zeroed, with it: see :meth:`Episode.rewards`). A trainer needs floats, so a
verification that failed on our side (``sandbox_error``) gives 0.0 with ``info["valid"] =
False`` for masking, never a silent 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import defaults
from ..client import SessionClient
from ..errors import ValidationError
from ..sessions import Session, SessionEnded, SessionLike, SessionLimits
from ..sessions.verify import EpisodeRewards, VerifyResult
from ..tasks import AgentTask

_FENCE = re.compile(r"```(?:bash|sh|shell)\s*\n(.*?)```", re.DOTALL)
_VERIFY = re.compile(r"<verify>(.*?)</verify>|<verify\s*/?>", re.DOTALL)
_SUBMIT = re.compile(r"<submit\s*/?>")
#: Observations are cut to this many characters (tail kept).
MAX_OBSERVATION = 4000
DEFAULT_LIMITS = SessionLimits(cpu_s=600, memory_mb=512, processes=64, disk_mb=256)


@dataclass
class Outcome:
    """What one action gave: the observation, its reward, whether the episode is over."""

    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


def task_of(value: AgentTask | Mapping[str, Any]) -> AgentTask:
    """An ``AgentTask``, or one parsed from a native-format row (errors name the field)."""
    return value if isinstance(value, AgentTask) else AgentTask.from_dict(value)


def parse_action(action: str | Mapping[str, Any]) -> dict[str, Any]:
    """A structured action from a dict, a JSON object or model text (see the module doc)."""
    if isinstance(action, Mapping):
        return dict(action)
    if not isinstance(action, str):
        raise ValidationError("action", "must be text or an object")
    text = action.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    if _SUBMIT.search(text):
        return {"submit": True}
    fence = _FENCE.findall(text)
    if fence:
        return {"command": fence[-1].strip()}
    found = _VERIFY.search(text)
    if found:
        body = (found.group(1) or "").strip()
        diagnosis = None
        if body:
            try:
                diagnosis = json.loads(body)
            except ValueError:
                return {"error": "the diagnosis in <verify>...</verify> is not JSON"}
        return {"verify": True, "diagnosis": diagnosis}
    return {"error": "no action found: give a ```bash block, <verify> or <submit>"}


def _tail(text: str) -> str:
    return text if len(text) <= MAX_OBSERVATION else "...(cut)\n" + text[-MAX_OBSERVATION:]


def describe(v: VerifyResult) -> str:
    """A verification as the agent sees it: counts and names, never the hidden tests."""
    if v.verdict == "sandbox_error":
        return "verification failed on our side (not your fault); try again"
    lines = [f"tests: {v.passed}/{v.total} passed ({v.verdict})"]
    if v.newly_passing:
        lines.append("newly passing: " + ", ".join(v.newly_passing))
    if v.newly_failing:
        lines.append("newly failing: " + ", ".join(v.newly_failing))
    if v.protected_edits:
        lines.append(
            "protected files changed (reset for the tests): " + ", ".join(v.protected_edits)
        )
    if v.unparseable:
        lines.append("files that do not parse: " + ", ".join(v.unparseable))
    return "\n".join(lines)


_clients: dict[tuple[str, str | None], SessionClient] = {}


def source_of(source: object, url: str | None, token: str | None = None) -> object:
    """Where an adapter's sessions live: ``url`` (an ``assay serve``; one pooled client per
    URL and token in the process) when given, else ``source`` (a Runner or LocalExecutor;
    ``None``: the process-wide embedded executor)."""
    if url:
        key = (url.rstrip("/"), token)
        if key not in _clients:  # a race makes two clients, one of them unused: harmless
            _clients[key] = SessionClient(url, token)
        return _clients[key]
    if source is None:
        from ._judging import default_executor

        return default_executor()
    return source


class Episode:
    """One agent episode: a session on a task, stepped by actions. ``source``: a Runner or
    LocalExecutor (the session is in this process), or a ``SessionClient`` (it is held by
    that server: the trainer's process needs no sandbox of its own)."""

    def __init__(
        self,
        source: object,
        task: AgentTask | Mapping[str, Any],
        *,
        gated: bool = False,
        max_steps: int = 30,
        step_timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S,
        limits: SessionLimits | None = None,
        **session_kwargs: Any,
    ) -> None:
        self.task = task_of(task)
        self.max_steps = max_steps
        self.step_timeout_s = step_timeout_s
        self.steps = 0
        self.done = False
        lim = limits or DEFAULT_LIMITS
        self.session: SessionLike
        if isinstance(source, SessionClient):
            self.session = source.session(task=self.task, gated=gated, limits=lim, **session_kwargs)
        else:
            self.session = Session.for_task(
                source, self.task, gated=gated, limits=lim, **session_kwargs
            )

    @property
    def prompt(self) -> str:
        files = ", ".join(sorted(self.task.files)[:50])
        return (
            f"{self.task.instructions}\n\nWorkspace (/work): {files}\n"
            "Act with a ```bash block (a shell command in /work), <verify> to run the hidden "
            'tests (optionally <verify>{"lines": ["path:n"]}</verify> to say what you blame), '
            "or <submit> when done."
        )

    def step(self, action: str | Mapping[str, Any]) -> Outcome:
        """Run one action. Past ``max_steps`` the episode is submitted (``truncated``)."""
        if self.done:
            raise ValidationError("action", "the episode is over")
        act = parse_action(action)
        self.steps += 1
        try:
            return self._step(act)
        except SessionEnded as exc:
            # The session is gone (its budget, its TTL, or a step that killed its agent):
            # the episode ends. Only our own failure is not a training signal.
            self.done = True
            ours = "sandbox_error" in exc.detail
            info = {"valid": not ours, "kind": "ended", "reason": exc.reason, "detail": exc.detail}
            return Outcome(f"the session ended: {exc}", 0.0, True, info)

    def _step(self, act: dict[str, Any]) -> Outcome:
        if "error" in act:
            out = Outcome(str(act["error"]), 0.0, False, {"valid": True, "kind": "invalid"})
        elif act.get("submit"):
            return self._finish(truncated=False)
        elif act.get("verify"):
            v = self.session.verify(act.get("diagnosis"))
            reward = v.step_reward if v.step_reward is not None else 0.0
            info = {"valid": v.step_reward is not None, "kind": "verify", "verify": v.to_dict()}
            out = Outcome(describe(v), reward, False, info)
        elif "command" in act:
            r = self.session.exec(str(act["command"]), timeout_s=self.step_timeout_s)
            text = (r.stdout + r.stderr).decode(errors="replace")
            status = "timed out" if r.timed_out else f"exit {r.exit_code}"
            out = Outcome(_tail(f"{text}\n[{status}]"), 0.0, False, {"valid": True, "kind": "exec"})
        elif "write" in act:
            self.session.write_file(str(act["write"]), str(act.get("content", "")))
            out = Outcome(f"wrote {act['write']}", 0.0, False, {"valid": True, "kind": "write"})
        elif "read" in act:
            data = self.session.read_file(str(act["read"])).decode(errors="replace")
            out = Outcome(_tail(data), 0.0, False, {"valid": True, "kind": "read"})
        else:
            out = Outcome("unknown action", 0.0, False, {"valid": True, "kind": "invalid"})
        if self.steps >= self.max_steps:
            final = self._finish(truncated=True)
            final.observation = out.observation + "\n" + final.observation
            return final
        return out

    def _finish(self, truncated: bool) -> Outcome:
        v = self.session.verify()
        self.done = True
        episode = self.session.episode_rewards()
        info = {
            "valid": v.reward is not None,
            "kind": "submit",
            "truncated": truncated,
            "verify": v.to_dict(),
            "episode": episode.to_dict(),
        }
        return Outcome(describe(v), v.reward if v.reward is not None else 0.0, True, info)

    def rewards(self) -> EpisodeRewards:
        """The final reward and every step reward (gated: paid or zeroed with the outcome)."""
        rewards: EpisodeRewards = self.session.episode_rewards()
        return rewards

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "DEFAULT_LIMITS",
    "MAX_OBSERVATION",
    "Episode",
    "Outcome",
    "describe",
    "parse_action",
    "source_of",
    "task_of",
]
