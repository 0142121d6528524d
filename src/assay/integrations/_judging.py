"""What the trainer adapters share: rows in, one :class:`Outcome` per row out.

Both adapters do the same three steps: read each row's tests and code (:func:`prepare`),
judge the rows that could be read in one batch (embedded :class:`LocalExecutor`, or the
server's ``/v1/judge`` via :mod:`._remote`), and put the outcomes back in row order
(:func:`judge_rows`). A row that cannot be judged (unreadable tests, a sandbox failure, a
deadline) gets ``reward=None`` with the reason, never a silent 0: a trainer must not punish
the model for our faults or for bad data.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import languages
from .._extract import extract
from ..errors import ValidationError
from ..executor import BatchHandle, Executor, JobResult, LocalExecutor
from ..judge import Problem, Submission, validate
from ..reward import BinaryReward, RewardFn
from ..reward import get as get_reward
from ..types import Limits
from ._remote import RemoteJudge, RemoteRefused, RemoteResult, Transport
from .groundtruth import EXTRA_KEYS, parse_ground_truth

__all__ = [
    "OPTIONS",
    "Memo",
    "Outcome",
    "RewardConfig",
    "default_executor",
    "judge_rows",
    "judge_rows_async",
    "prepare",
    "resolve_config",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One row's result. ``reward`` is None when the row says nothing about the program."""

    verdict: str
    reward: float | None
    passed: int
    total: int
    reason: str

    @property
    def valid(self) -> bool:
        return self.reward is not None


def unjudged(verdict: str, reason: str, total: int = 0) -> Outcome:
    return Outcome(verdict, None, 0, total, reason)


log = logging.getLogger("assay.integrations")

_lock = threading.Lock()
_executor: list[LocalExecutor] = []  # the one shared executor, once made


def default_executor() -> LocalExecutor:
    """The process-wide embedded executor, created on first use (thread-safe).

    Created lazily because starting one warms a sandbox pool, which importing a reward
    module must not do; shared because every reward call of a process should feed one
    scheduler and one result cache.
    """
    with _lock:
        if not _executor:
            _executor.append(LocalExecutor())
            atexit.register(_executor[0].close)
        return _executor[0]


#: What the reward does not need past the verdict: with these, judging stops at the first
#: failed test unless ``stop_on_failure=False`` is given.
_VERDICT_ONLY = frozenset({"binary"})


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """How the trainer integrations judge rows; every field is keyword-only.

    ``url``: judge on an ``assay serve`` at this base URL (its ``/v1/judge``) instead of the
    in-process ``executor`` (default: the shared :func:`default_executor`; any
    :class:`~assay.executor.Executor`: a ``RayExecutor``, a ``QueueExecutor``); ``transport``
    replaces the network for tests. ``reward``: a name from :data:`assay.reward.REGISTRY`
    or a :class:`RewardFn`; over ``url`` only ``binary`` (the server's reward) and
    ``fraction`` (passed/total) exist, because the server only reports those numbers.
    ``language`` is used when a row does not name one. ``limits`` replaces every row's
    limits (default: the dataset's; APPS-style rows get 4 s CPU, 1 GiB). ``deadline_s``
    bounds a whole call: rows still running then come back unjudged (``None`` / ``valid``
    False). ``stop_on_failure`` ends a row's judging at its first failed test, so one
    looping completion costs one time limit, not one per test; None (the default) means on
    for rewards that use the verdict only (``binary``) and off for the others (a pass
    fraction needs every test). ``retries`` bounds the retries of a request the server
    refused for overload or could not take (``url`` only). ``caller`` is the fairness key
    (sent as ``X-Assay-Caller`` over ``url``: the server's logs and records name it too).
    """

    url: str | None = None
    executor: Executor | None = None
    language: str = "python"
    reward: str | RewardFn = "binary"
    limits: Limits | None = None
    transport: Transport | None = None
    deadline_s: float | None = None
    stop_on_failure: bool | None = None
    retries: int = 3
    caller: str = "integration"

    def __post_init__(self) -> None:
        if self.url is not None and self.executor is not None:
            raise ValidationError("executor", "give either url or executor, not both")
        if self.url is not None and self.reward not in ("binary", "fraction"):
            raise ValidationError("reward", "over url only 'binary' and 'fraction' can be computed")
        if self.retries < 0:
            raise ValidationError("retries", "must be >= 0")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise ValidationError("deadline_s", "must be a positive number of seconds")
        if self.limits is not None and not isinstance(self.limits, Limits):
            raise ValidationError("limits", "must be an assay.Limits")
        if self.url is None and self.transport is not None:
            raise ValidationError("transport", "only used with url")
        if isinstance(self.reward, str) and self.url is None:
            get_reward(self.reward)  # unknown names fail here, not on the first batch
        languages.get(self.language)

    @property
    def stops_on_failure(self) -> bool:
        if self.stop_on_failure is not None:
            return self.stop_on_failure
        if isinstance(self.reward, str):
            return self.reward in _VERDICT_ONLY
        return type(self.reward) is BinaryReward

    def reward_fn(self) -> RewardFn:
        return get_reward(self.reward) if isinstance(self.reward, str) else self.reward

    def remote(self) -> RemoteJudge:
        assert self.url is not None
        return RemoteJudge(
            self.url,
            transport=self.transport,
            retries=self.retries,
            stop_on_failure=self.stops_on_failure,
            deadline_s=self.deadline_s,
            caller=self.caller,
        )


#: The option names :func:`resolve_config` takes as keywords (all of :class:`RewardConfig`'s).
OPTIONS = frozenset(f.name for f in dataclasses.fields(RewardConfig))


def resolve_config(
    given: RewardConfig | None, options: Mapping[str, Any], caller: str
) -> tuple[RewardConfig, list[str]]:
    """The config an adapter was called with: ``given`` (a :class:`RewardConfig`) with the
    keyword ``options`` applied over it, and the option names that are not config fields
    (the adapter decides whether to refuse or ignore them)."""
    known = {k: v for k, v in options.items() if k in OPTIONS}
    unknown = sorted(k for k in options if k not in OPTIONS)
    base = given if given is not None else RewardConfig(caller=caller)
    if not isinstance(base, RewardConfig):
        raise ValidationError("config", "must be an assay.integrations.RewardConfig")
    if "caller" not in known and given is None:
        known["caller"] = caller
    return (dataclasses.replace(base, **known) if known else base), unknown


class Memo:
    """Parsed problems of one batch: GRPO repeats each prompt n times, so each distinct
    ground truth is parsed once and all its rows share one Problem object (the executor
    fingerprints problems by identity)."""

    def __init__(self) -> None:
        self._seen: dict[str, Problem | ValidationError] = {}

    def problem(
        self, data_source: str | None, ground_truth: Any, extra: Mapping[str, Any] | None
    ) -> Problem:
        relevant = {k: extra[k] for k in EXTRA_KEYS if k in extra} if extra else None
        try:
            key = json.dumps([data_source, ground_truth, relevant], sort_keys=True, default=repr)
        except (TypeError, ValueError):  # e.g. mixed key types: just parse it again
            return parse_ground_truth(ground_truth, data_source=data_source, extra_info=extra)
        hit = self._seen.get(key)
        if hit is None:
            try:
                hit = parse_ground_truth(ground_truth, data_source=data_source, extra_info=extra)
            except ValidationError as exc:
                hit = exc
            self._seen[key] = hit
        if isinstance(hit, ValidationError):
            raise hit
        return hit


def prepare(
    response: str,
    ground_truth: Any,
    config: RewardConfig,
    *,
    data_source: str | None = None,
    extra_info: Mapping[str, Any] | None = None,
    memo: Memo | None = None,
) -> Submission | Outcome:
    """The submission for one row, or an unjudged :class:`Outcome` saying why there is none."""
    try:
        memo = memo or Memo()
        problem = memo.problem(data_source, ground_truth, extra_info)
        if config.limits is not None:
            problem = dataclasses.replace(problem, limits=config.limits)
        row_lang = (extra_info or {}).get("language")
        language = languages.get(
            row_lang
            if isinstance(row_lang, str) and row_lang
            else problem.metadata.get("language") or config.language
        ).name
        found = extract(response, language)
        if found.empty:
            # The model's own failure, like a wrong answer (reward 0), and never run: an
            # empty program would "run" and be judged runtime_error or worse.
            return Outcome("no_code", 0.0, 0, len(problem.tests), "the completion holds no code")
        submission = Submission(problem, found.code, language)
        validate(submission)
        if config.url is not None:
            RemoteJudge.encode(submission)  # tests the server cannot take fail this row only
    except ValidationError as exc:
        return unjudged("invalid_input", str(exc))
    return submission


def _local(result: JobResult, submission: Submission, reward: RewardFn) -> Outcome:
    total = len(submission.problem.tests)
    judgement = result.judgement
    if result.outcome != "done" or judgement is None:
        verdict = result.outcome if result.outcome != "done" else (result.verdict or "error")
        return unjudged(verdict, result.reason or verdict, total)
    value = reward(judgement, submission.problem, submission=submission)
    reason = judgement.reason if value.value is not None else value.reason
    return Outcome(judgement.verdict, value.value, judgement.passed, total, reason)


def _remote(result: RemoteResult, submission: Submission, config: RewardConfig) -> Outcome:
    total = len(submission.problem.tests)
    if result.reward is None:
        return unjudged(result.verdict, result.reason, total)
    reward = result.reward
    if config.reward == "fraction":
        reward = result.passed / total if total else 0.0
    return Outcome(result.verdict, reward, result.passed, total, result.reason)


def _refused(subs: list[Submission], exc: RemoteRefused) -> list[RemoteResult]:
    """The server refused the request (a wrong URL, a version mismatch): every row comes
    back unjudged with the server's words, so a training step gets masked rows rather than
    an exception mid-step; the error is logged, since it will not heal by itself."""
    log.error("judge server refused the batch: %s", exc)
    return [RemoteResult("remote_error", None, 0, len(s.problem.tests), str(exc)) for s in subs]


class _Rows:
    """One batch of rows through one path; :func:`judge_rows` and :func:`judge_rows_async`
    differ only in how they wait for the judging."""

    def __init__(self, items: Sequence[Submission | Outcome], config: RewardConfig) -> None:
        self.items = items
        self.config = config
        self.index = [i for i, item in enumerate(items) if isinstance(item, Submission)]
        self.subs = [s for s in items if isinstance(s, Submission)]
        self.executor = None if config.url is not None else (config.executor or default_executor())

    def submit(self) -> BatchHandle:
        assert self.executor is not None
        return self.executor.submit(
            self.subs,
            caller=self.config.caller,
            deadline_s=self.config.deadline_s,
            stop_on_failure=self.config.stops_on_failure,
        )

    def local(self, results: list[JobResult]) -> list[Outcome]:
        reward = self.config.reward_fn()
        judged = [_local(r, s, reward) for r, s in zip(results, self.subs, strict=True)]
        return self.merge(judged)

    def remote(self, results: list[RemoteResult]) -> list[Outcome]:
        judged = [_remote(r, s, self.config) for r, s in zip(results, self.subs, strict=True)]
        return self.merge(judged)

    def merge(self, judged: list[Outcome]) -> list[Outcome]:
        out = [item if isinstance(item, Outcome) else None for item in self.items]
        for i, outcome in zip(self.index, judged, strict=True):
            out[i] = outcome
        return [o for o in out if o is not None]


def judge_rows(items: Sequence[Submission | Outcome], config: RewardConfig) -> list[Outcome]:
    """Judge every submission of ``items`` in one batch; outcomes in the order of ``items``."""
    rows = _Rows(items, config)
    if not rows.subs:
        return rows.merge([])
    if rows.executor is None:
        try:
            return rows.remote(config.remote().judge(rows.subs))
        except RemoteRefused as exc:
            return rows.remote(_refused(rows.subs, exc))
    return rows.local(rows.submit().gather())


async def judge_rows_async(
    items: Sequence[Submission | Outcome], config: RewardConfig
) -> list[Outcome]:
    """:func:`judge_rows` without blocking the event loop."""
    rows = _Rows(items, config)
    if not rows.subs:
        return rows.merge([])
    if rows.executor is None:
        try:
            return rows.remote(await config.remote().judge_async(rows.subs))
        except RemoteRefused as exc:
            return rows.remote(_refused(rows.subs, exc))
    return rows.local(await rows.submit().gather_async())
