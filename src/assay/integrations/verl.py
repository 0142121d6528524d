"""veRL reward functions: point ``custom_reward_function`` at this module.

.. code-block:: yaml

    custom_reward_function:
      path: /path/to/site-packages/assay/integrations/verl.py
      name: compute_score            # NaiveRewardManager / DAPO (one row per call)
      # name: compute_score_batch    # with reward_model.reward_manager=batch (one call per step)
      reward_kwargs: {url: null, reward: binary}

Every returned dict has the same keys for every row, because veRL collects them into
per-key arrays (``reward_extra_info``) and would fail on a missing key:

``score``  float used as the reward: the reward of the program (0.0 for its own failures).
``acc``    bool, the program was accepted.
``passed``, ``total``  tests passed, tests of the problem.
``verdict``  the judge's verdict, or ``invalid_input`` / ``sandbox_error`` / ``deadline`` /
           ``remote_error`` when the row could not be judged.
``reason``  why, in words.
``valid``  False when the row says nothing about the program (unreadable tests, our
           sandbox failing, a deadline, the server down). veRL needs a float, so such rows
           score 0.0; mask them with ``valid`` (or drop the group) rather than train on them.

``url=None`` judges in-process on a shared :class:`LocalExecutor` (created on first use;
``executor=`` passes your own); ``url="http://host:port"`` sends the rows to an Assay
server's ``/v1/judge``. Other keyword arguments veRL may pass are ignored (logged once).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ValidationError
from ..executor import LocalExecutor
from ..reward import RewardFn
from ..types import Limits
from ._judging import Config, Memo, Outcome, judge_rows, judge_rows_async, prepare
from ._remote import Transport

__all__ = [
    "KEYS",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "compute_score_batch_async",
]

log = logging.getLogger("assay.integrations.verl")

#: The keys of every score dict, in this order.
KEYS = ("score", "acc", "passed", "total", "verdict", "reason", "valid")
_warned: set[str] = set()


def _config(
    url: str | None,
    executor: LocalExecutor | None,
    language: str,
    reward: str | RewardFn,
    limits: Limits | None,
    transport: Transport | None,
    deadline_s: float | None,
    retries: int,
    ignored: Mapping[str, Any],
) -> Config:
    fresh = sorted(set(ignored) - _warned)
    if fresh:
        _warned.update(fresh)
        log.warning("assay compute_score ignores keyword arguments: %s", ", ".join(fresh))
    return Config(url, executor, language, reward, limits, transport, deadline_s, "verl", retries)


def _row(o: Outcome) -> dict[str, Any]:
    return {
        "score": float(o.reward) if o.reward is not None else 0.0,
        "acc": o.verdict == "accepted",
        "passed": o.passed,
        "total": o.total,
        "verdict": o.verdict,
        "reason": o.reason,
        "valid": o.valid,
    }


def _items(
    data_sources: Sequence[str | None],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None,
    config: Config,
) -> list[Any]:
    n = len(solution_strs)
    extras = list(extra_infos) if extra_infos is not None else [None] * n
    if not len(data_sources) == len(ground_truths) == len(extras) == n:
        raise ValidationError(
            "solution_strs",
            f"batch columns differ in length: data_sources {len(data_sources)}, "
            f"solution_strs {n}, ground_truths {len(ground_truths)}, extra_infos {len(extras)}",
        )
    memo = Memo()
    return [
        prepare(s, gt, config, data_source=ds, extra_info=ex, memo=memo)
        for ds, s, gt, ex in zip(data_sources, solution_strs, ground_truths, extras, strict=True)
    ]


def compute_score_batch(
    data_sources: Sequence[str | None],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    url: str | None = None,
    executor: LocalExecutor | None = None,
    language: str = "python",
    reward: str | RewardFn = "binary",
    limits: Limits | None = None,
    transport: Transport | None = None,
    deadline_s: float | None = None,
    retries: int = 3,
    **ignored: Any,
) -> list[dict[str, Any]]:
    """Score a whole step's rows as one batch (deduplicated, run in parallel)."""
    config = _config(
        url, executor, language, reward, limits, transport, deadline_s, retries, ignored
    )
    items = _items(data_sources, solution_strs, ground_truths, extra_infos, config)
    return [_row(o) for o in judge_rows(items, config)]


async def compute_score_batch_async(
    data_sources: Sequence[str | None],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    url: str | None = None,
    executor: LocalExecutor | None = None,
    language: str = "python",
    reward: str | RewardFn = "binary",
    limits: Limits | None = None,
    transport: Transport | None = None,
    deadline_s: float | None = None,
    retries: int = 3,
    **ignored: Any,
) -> list[dict[str, Any]]:
    """:func:`compute_score_batch` for async reward loops."""
    config = _config(
        url, executor, language, reward, limits, transport, deadline_s, retries, ignored
    )
    items = _items(data_sources, solution_strs, ground_truths, extra_infos, config)
    return [_row(o) for o in await judge_rows_async(items, config)]


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """Score one row (veRL's ``custom_reward_function`` signature); options as for
    :func:`compute_score_batch`. Rows of concurrent calls share the executor's batching."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kw)[0]


async def compute_score_async(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """:func:`compute_score` for veRL's async reward loop."""
    rows = await compute_score_batch_async(
        [data_source], [solution_str], [ground_truth], [extra_info], **kw
    )
    return rows[0]
