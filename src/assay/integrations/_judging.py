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
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import languages
from ..errors import ValidationError
from ..executor import JobResult, LocalExecutor
from ..judge import Problem, Submission, validate
from ..reward import RewardFn
from ..reward import get as get_reward
from ..types import Limits
from ._remote import RemoteJudge, RemoteResult, Transport
from .extract import extract_code
from .groundtruth import EXTRA_KEYS, parse_ground_truth

__all__ = [
    "Config",
    "Memo",
    "Outcome",
    "default_executor",
    "judge_rows",
    "judge_rows_async",
    "prepare",
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


_lock = threading.Lock()
_executor: LocalExecutor | None = None


def default_executor() -> LocalExecutor:
    """The process-wide embedded executor, created on first use (thread-safe).

    Created lazily because starting one warms a sandbox pool, which importing a reward
    module must not do; shared because every reward call of a process should feed one
    scheduler and one result cache.
    """
    global _executor
    with _lock:
        if _executor is None:
            _executor = LocalExecutor()
            atexit.register(_executor.close)
        return _executor


@dataclass(frozen=True)
class Config:
    """How rows are judged: where (``url`` or ``executor``), and what a row is worth.

    ``reward`` is a name from :data:`assay.reward.REGISTRY` or a :class:`RewardFn`; over
    ``url`` only ``binary`` (the server's reward) and ``fraction`` (passed/total) exist,
    because the server only reports those numbers. ``language`` is used when a row does not
    name one; ``limits`` replaces the dataset's limits; ``retries`` bounds the retries of a
    request the server refused for overload or could not take (``url`` only).
    """

    url: str | None = None
    executor: LocalExecutor | None = None
    language: str = "python"
    reward: str | RewardFn = "binary"
    limits: Limits | None = None
    transport: Transport | None = None
    deadline_s: float | None = None
    caller: str = "integration"
    retries: int = 3

    def __post_init__(self) -> None:
        if self.url is not None and self.executor is not None:
            raise ValidationError("executor", "give either url or executor, not both")
        if self.url is not None and self.reward not in ("binary", "fraction"):
            raise ValidationError("reward", "over url only 'binary' and 'fraction' can be computed")
        if self.retries < 0:
            raise ValidationError("retries", "must be >= 0")
        if self.url is None and self.transport is not None:
            raise ValidationError("transport", "only used with url")
        if isinstance(self.reward, str) and self.url is None:
            get_reward(self.reward)  # unknown names fail here, not on the first batch
        languages.get(self.language)

    def reward_fn(self) -> RewardFn:
        return get_reward(self.reward) if isinstance(self.reward, str) else self.reward

    def remote(self) -> RemoteJudge:
        assert self.url is not None
        return RemoteJudge(self.url, transport=self.transport, retries=self.retries)


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
    config: Config,
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
        submission = Submission(problem, extract_code(response, language), language)
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


def _remote(result: RemoteResult, config: Config) -> Outcome:
    reward = result.reward
    if reward is not None and config.reward == "fraction":
        reward = result.passed / result.total if result.total else 0.0
    return Outcome(result.verdict, reward, result.passed, result.total, result.reason)


def _split(items: Sequence[Submission | Outcome]) -> tuple[list[int], list[Submission]]:
    index = [i for i, item in enumerate(items) if isinstance(item, Submission)]
    return index, [s for s in items if isinstance(s, Submission)]


def _merge(
    items: Sequence[Submission | Outcome], index: list[int], judged: list[Outcome]
) -> list[Outcome]:
    out = [item if isinstance(item, Outcome) else None for item in items]
    for i, outcome in zip(index, judged, strict=True):
        out[i] = outcome
    assert all(o is not None for o in out)
    return [o for o in out if o is not None]


def judge_rows(items: Sequence[Submission | Outcome], config: Config) -> list[Outcome]:
    """Judge every submission of ``items`` in one batch; outcomes in the order of ``items``."""
    index, subs = _split(items)
    if not subs:
        judged: list[Outcome] = []
    elif config.url is not None:
        judged = [_remote(r, config) for r in config.remote().judge(subs)]
    else:
        ex = config.executor or default_executor()
        results = ex.run(subs, caller=config.caller, deadline_s=config.deadline_s)
        reward = config.reward_fn()
        judged = [_local(r, s, reward) for r, s in zip(results, subs, strict=True)]
    return _merge(items, index, judged)


async def judge_rows_async(items: Sequence[Submission | Outcome], config: Config) -> list[Outcome]:
    """:func:`judge_rows` without blocking the event loop."""
    index, subs = _split(items)
    if not subs:
        judged: list[Outcome] = []
    elif config.url is not None:
        judged = [_remote(r, config) for r in await config.remote().judge_async(subs)]
    else:
        ex = config.executor or default_executor()
        results = await ex.run_async(subs, caller=config.caller, deadline_s=config.deadline_s)
        reward = config.reward_fn()
        judged = [_local(r, s, reward) for r, s in zip(results, subs, strict=True)]
    return _merge(items, index, judged)
