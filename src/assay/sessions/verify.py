"""``Session.verify``: a task's hidden tests, run on a snapshot of the workspace, and the
step reward of the verification (see :mod:`assay.sessions.step_reward`).

The hidden tests never enter the session: each verification tars the workspace, resets the
protected paths to the task's copy on the trusted side, and runs the tests in a separate,
fresh sandbox (:mod:`assay.sessions._verify_run`). What the agent did to its workspace can
change which tests pass only through the code under test.
"""

from __future__ import annotations

import copy
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar

from .._pysource import parse_quietly
from ..errors import ValidationError
from ..tasks.patch import PatchLines, diff_size, parse_patch
from ..tasks.types import AgentTask, tree_from_tar
from ..tasks.workspace import workspace_tar
from . import _verify_run
from ._outcomes import environment_failure, failure_reason, statuses
from .step_reward import Paid, RewardWeights, check_diagnosis, diagnosis_score, step_reward
from .types import SessionLimits


class Verifiable(Protocol):
    """What verification needs of a session (``Session`` is one; it imports this module,
    never the other way): its id, a tar of its workspace, and the door into its sandbox."""

    id: str
    _execute: _verify_run.Execute

    def download_tar(
        self, directory: str = ".", gzip: bool = False, exclude: tuple[str, ...] = ()
    ) -> bytes: ...


S = TypeVar("S", bound=Verifiable)

VerifyVerdict = Literal["accepted", "failed", "sandbox_error"]
_VERIFIERS: weakref.WeakKeyDictionary[Verifiable, Verifier] = weakref.WeakKeyDictionary()
#: Names the session reserves for its own agent (``.assay_agent.py``, ``.assay_kernel.py``).
_RESERVED_PREFIX = ".assay_"


@dataclass(frozen=True)
class VerifyResult:
    """One verification. ``reward`` is the outcome reward (``passed / total``) and
    ``step_reward`` this step's reward; both are ``None`` when the verification itself
    failed (``sandbox_error``: our fault, not a training signal)."""

    passed: int
    total: int
    verdict: VerifyVerdict
    newly_passing: list[str]
    newly_failing: list[str]
    protected_edits: list[str]
    unparseable: list[str]
    diff_lines: int
    diagnosis_score: float
    terms: dict[str, float]
    step_reward: float | None
    reward: float | None
    tests: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    wall_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EpisodeRewards:
    """An episode's rewards for the trainer: the final verification's reward, and one step
    reward per verification (``None`` where it failed). In gated mode the step rewards are
    paid (``paid``) only if the final verification is accepted with no protected edit;
    otherwise each is 0.0."""

    final_reward: float | None
    verdict: VerifyVerdict | None
    step_rewards: list[float | None]
    raw_step_rewards: list[float | None]
    gated: bool
    paid: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Baseline:
    ids: list[str]
    passing: frozenset[str]
    #: Tests the environment skips on the task's own workspace (neither pass nor fail).
    skipped: frozenset[str]


class Verifier:
    """The verification state of one episode: the task, the passing tests of the previous
    verification, what the reward has paid so far, and the step rewards. ``copy()`` is what
    a fork inherits."""

    def __init__(
        self,
        task: AgentTask,
        weights: RewardWeights | None = None,
        gated: bool = False,
        execute: _verify_run.Execute | None = None,
    ) -> None:
        if not isinstance(task, AgentTask):
            raise ValidationError("task", "must be an AgentTask")
        self.task = task
        #: How verification runs are executed (default: the session's sandbox pool).
        self.execute = execute
        self.weights = weights or RewardWeights()
        self.gated = bool(gated)
        self.reference: PatchLines | None = (
            parse_patch(task.reference_patch) if task.reference_patch else None
        )
        self.previous: frozenset[str] | None = None
        #: What the episode's reward terms have paid (each is paid once, or for a change).
        self.paid = Paid()
        self.results: list[VerifyResult] = []
        #: One verification at a time per episode (each compares with the one before).
        self._lock = threading.Lock()

    def copy(self) -> Verifier:
        with self._lock:
            twin = copy.copy(self)
            twin.results = list(self.results)
            twin.paid = copy.copy(self.paid)
        twin._lock = threading.Lock()
        return twin

    # -- the baseline: the task's own workspace -------------------------------------------------
    def baseline(self, execute: _verify_run.Execute) -> _Baseline | str:
        """Which tests exist and which pass on the task's own workspace (cached on the task),
        or why the task cannot be judged: a failure there is the task's or the
        environment's, never the agent's."""
        cached: _Baseline | str | None = getattr(self.task, "_assay_baseline", None)
        if cached is not None:
            return cached
        work, _ = _verify_run.prepare(self.task, self.task.files)
        run = _verify_run.run_tests(execute, self.task, work)
        if run.sandbox_error is not None:  # our fault: not cached, the next verify retries
            return f"the baseline run of the task failed: {run.sandbox_error}"
        broken = environment_failure(self.task, run)
        if broken is not None:
            base: _Baseline | str = f"the task cannot be judged: {broken}"
        else:
            if self.task.test_names:
                ids = list(self.task.test_names)
            elif "test_command" in run.outcomes:
                ids = ["test_command"]
            else:
                found = list(run.outcomes)
                ids = found + [
                    i
                    for i in _verify_run.static_ids(self.task)
                    if i not in run.outcomes and not any(f.startswith(i + "[") for f in found)
                ]
            status = statuses(ids, run) if not run.tampered else {}
            base = _Baseline(
                ids,
                frozenset(i for i in ids if status.get(i) == "passed"),
                frozenset(i for i in ids if status.get(i) == "skipped"),
            )
        object.__setattr__(self.task, "_assay_baseline", base)
        return base

    # -- one verification ------------------------------------------------------------------
    def verify_snapshot(
        self,
        execute: _verify_run.Execute,
        snapshot: Mapping[str, bytes],
        diagnosis: object = None,
        links: Mapping[str, str] | None = None,
    ) -> VerifyResult:
        """Verify a workspace snapshot (path -> bytes, and its symlinks) and record the step."""
        with self._lock:
            return self._verify(execute, snapshot, diagnosis, links)

    def _verify(
        self,
        execute: _verify_run.Execute,
        snapshot: Mapping[str, bytes],
        diagnosis: object,
        links: Mapping[str, str] | None,
    ) -> VerifyResult:
        start = time.perf_counter()
        diag = check_diagnosis(diagnosis)
        snap = _clean(snapshot)
        snap_links = {p: t for p, t in (links or {}).items() if not _is_git(p)}
        if links is None:
            snap_links = dict(self.task.links)
        base = self.baseline(execute)
        if isinstance(base, str):
            return self._failed(base, start)
        work, edits = _verify_run.prepare(self.task, snap, snap_links)
        run = _verify_run.run_tests(execute, self.task, work, snap_links)
        if run.sandbox_error is not None:
            return self._failed(run.sandbox_error, start)
        ids = base.ids
        usable = run.complete and not run.tampered
        status = statuses(ids, run)
        passing = frozenset(
            i
            for i in ids
            if usable and (status[i] == "passed" or (status[i] == "skipped" and i in base.skipped))
        )
        previous = self.previous if self.previous is not None else base.passing
        total = len(ids)
        changed = [p for p in snap if snap[p] != self.task.files.get(p)]
        unparseable = [p for p in sorted(changed) if p.endswith(".py") and not _parses(snap[p])]
        lines = diff_size(self.task.files, snap) if self.reference is not None else 0
        ref_size = self.reference.size if self.reference is not None else 0
        diag_score = diagnosis_score(diag, self.reference, self.task.files)
        state: dict[str, frozenset[str] | float] = {
            "protected": frozenset(edits),
            "unparseable": frozenset(unparseable),
            "diff_excess": min(1.0, max(0.0, lines / ref_size - 1)) if ref_size else 0.0,
            "diagnosis": diag_score,
        }
        terms = {
            "pass_delta": (len(passing) - len(previous & set(ids))) / total if total else 0.0,
            "regression": len(previous - passing) / total if total else 0.0,
            **self.paid.pay(state),
        }
        accepted = bool(total) and len(passing) == total and not edits
        reason = ""
        if run.tampered:
            reason = "the code under test patched the test runner: " + ", ".join(run.tampered)
        elif not run.complete:
            res = run.result
            reason = f"the test run ended early ({res.status if res else '?'}): " + (
                run.tail()[-300:] or "no output"
            )
        elif not accepted:
            reason = failure_reason(status, run, edits, set(passing))
        tests = {i: ("passed" if i in passing else "failed") for i in ids}
        result = VerifyResult(
            passed=len(passing),
            total=total,
            verdict="accepted" if accepted else "failed",
            newly_passing=sorted(passing - previous),
            newly_failing=sorted(previous - passing),
            protected_edits=edits,
            unparseable=unparseable,
            diff_lines=lines,
            diagnosis_score=diag_score,
            terms={k: round(v, 6) for k, v in terms.items()},
            step_reward=step_reward(terms, self.weights),
            reward=round(len(passing) / total, 6) if total else 0.0,
            tests=tests,
            reason=reason or ("no test to count" if not total else ""),
            wall_ms=round((time.perf_counter() - start) * 1000, 2),
        )
        self.previous = passing
        self.results.append(result)
        return result

    def _failed(self, why: str, start: float) -> VerifyResult:
        result = VerifyResult(
            passed=0,
            total=0,
            verdict="sandbox_error",
            newly_passing=[],
            newly_failing=[],
            protected_edits=[],
            unparseable=[],
            diff_lines=0,
            diagnosis_score=0.0,
            terms={},
            step_reward=None,
            reward=None,
            reason=why[:500],
            wall_ms=round((time.perf_counter() - start) * 1000, 2),
        )
        self.results.append(result)
        return result

    def episode(self) -> EpisodeRewards:
        """The final reward and the step rewards of every verification so far."""
        raw = [r.step_reward for r in self.results]
        last = self.results[-1] if self.results else None
        paid = not self.gated or (
            last is not None and last.verdict == "accepted" and not last.protected_edits
        )
        steps = raw if paid else [None if r is None else 0.0 for r in raw]
        return EpisodeRewards(
            final_reward=last.reward if last else None,
            verdict=last.verdict if last else None,
            step_rewards=steps,
            raw_step_rewards=raw,
            gated=self.gated,
            paid=paid,
        )


def _is_git(path: str) -> bool:
    return path == ".git" or path.startswith(".git/")


def _clean(snapshot: Mapping[str, bytes]) -> dict[str, bytes]:
    """The workspace as the tests see it: without the session's own agent files, without
    the workspace's git repository (the agent's history, not code under test) and without
    compiled bytecode (a planted ``.pyc`` could stand in for its source)."""
    return {
        p: b
        for p, b in snapshot.items()
        if not (p.startswith(_RESERVED_PREFIX) and "/" not in p)
        and not _is_git(p)
        and "__pycache__/" not in f"/{p}"
        and not p.endswith(".pyc")
    }


def _parses(data: bytes) -> bool:
    if len(data) > 1 << 20:
        return True
    try:
        parse_quietly(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


# -- sessions with a task -------------------------------------------------------------------
def start(
    factory: Callable[..., S],
    source: object,
    task: AgentTask,
    *,
    weights: RewardWeights | None = None,
    gated: bool = False,
    execute: _verify_run.Execute | None = None,
    **kwargs: Any,
) -> S:
    """A session whose workspace is ``task``'s, ready for :meth:`Session.verify`. Without
    ``limits``, the session's disk and memory are the defaults or what the workspace needs,
    whichever is more (disk: twice its size, for the work tree, its git history and the
    agent's builds; memory: the tmpfs holding it and a tar of it)."""
    verifier = Verifier(task, weights, gated, execute)
    tar = workspace_tar(task)
    if kwargs.get("limits") is None:
        kwargs["limits"] = limits_for(tar)
    session = factory(source, tar=tar, **kwargs)
    _VERIFIERS[session] = verifier
    return session


def limits_for(workspace: bytes, base: SessionLimits | None = None) -> SessionLimits:
    """``base`` (default: the defaults) with disk and memory raised to what a session
    seeded with the ``workspace`` tar needs: twice its size on disk (the work tree, its git
    history, the agent's builds) and three times in memory (the tmpfs's pages are the
    session's memory, and a tar of the workspace is held whole as it goes in and out)."""
    base = base or SessionLimits()
    tar_mb = len(workspace) >> 20
    return replace(
        base,
        disk_mb=max(base.disk_mb, 2 * tar_mb + 64),
        memory_mb=max(base.memory_mb, 3 * tar_mb + 256),
    )


def attach(session: Verifiable, task: AgentTask, **kwargs: Any) -> Verifier:
    """Give an open session a task to verify against (its files are left as they are)."""
    verifier = Verifier(task, **kwargs)
    _VERIFIERS[session] = verifier
    return verifier


def verifier_of(session: Verifiable) -> Verifier:
    found = _VERIFIERS.get(session)
    if found is None:
        raise ValidationError("task", f"session {session.id} has no task to verify against")
    return found


def inherit(parent: Verifiable, child: Verifiable) -> None:
    """A fork verifies against its parent's task, continuing its parent's history."""
    found = _VERIFIERS.get(parent)
    if found is not None:
        _VERIFIERS[child] = found.copy()


def verify(session: Verifiable, diagnosis: object = None) -> VerifyResult:
    verifier = verifier_of(session)
    check_diagnosis(diagnosis)
    snapshot, links = tree_from_tar(session.download_tar(exclude=(".git",)), "workspace")
    execute = verifier.execute or session._execute
    return verifier.verify_snapshot(execute, snapshot, diagnosis, links)


def episode(session: Verifiable) -> EpisodeRewards:
    return verifier_of(session).episode()


__all__ = [
    "EpisodeRewards",
    "RewardWeights",
    "Verifier",
    "VerifyResult",
    "attach",
    "episode",
    "limits_for",
    "start",
    "verify",
]
