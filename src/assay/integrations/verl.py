r"""veRL reward functions: point ``reward.custom_reward_function`` at this module.

Tested with veRL 0.9.1, whose trainer scores rows in its reward loop (one call per row, the
rows of a step concurrently, through its ``naive`` reward manager):

.. code-block:: bash

    python -m verl.trainer.main_ppo \
        reward.custom_reward_function.path=pkg://assay.integrations.verl \
        reward.custom_reward_function.name=compute_score_async \
        +reward.custom_reward_function.reward_kwargs.reward=binary

``path`` may also be this file's path: veRL then loads it as a file of its own, which is why
this module imports absolutely. Releases that score with the legacy reward workers take
``compute_score_batch`` with ``reward_model.reward_manager=batch`` (one call per step).

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

Options are the fields of :class:`~assay.integrations.RewardConfig`, given as keywords
(``reward_kwargs`` in veRL's YAML) or as ``config=RewardConfig(...)``. ``url=None`` judges
in-process on a shared :class:`LocalExecutor` (created on first use; ``executor=`` passes
your own); ``url="http://host:port"`` sends the rows to an ``assay serve``'s ``/v1/judge``.
``limits=Limits(time_s=...)`` replaces the dataset's limits, ``stop_on_failure`` (on by
default for the ``binary`` reward) ends a row at its first failed test, ``deadline_s``
bounds a call. Other keyword arguments veRL may pass are ignored (logged once).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

# Absolute imports: veRL loads ``custom_reward_function.path`` as a file of its own (not as
# a module of this package), where relative imports cannot resolve.
from assay.errors import ValidationError
from assay.integrations import _judging

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


def _config(options: dict[str, Any]) -> _judging.RewardConfig:
    config, ignored = _judging.resolve_config(options.pop("config", None), options, "verl")
    fresh = sorted(set(ignored) - _warned)
    if fresh:
        _warned.update(fresh)
        log.warning("assay compute_score ignores keyword arguments: %s", ", ".join(fresh))
    return config


def _row(o: _judging.Outcome) -> dict[str, Any]:
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
    options: dict[str, Any],
) -> tuple[list[Any], _judging.RewardConfig]:
    config = _config(options)
    n = len(solution_strs)
    extras = list(extra_infos) if extra_infos is not None else [None] * n
    if not len(data_sources) == len(ground_truths) == len(extras) == n:
        raise ValidationError(
            "solution_strs",
            f"batch columns differ in length: data_sources {len(data_sources)}, "
            f"solution_strs {n}, ground_truths {len(ground_truths)}, extra_infos {len(extras)}",
        )
    memo = _judging.Memo()
    items = [
        _judging.prepare(s, gt, config, data_source=ds, extra_info=ex, memo=memo)
        for ds, s, gt, ex in zip(data_sources, solution_strs, ground_truths, extras, strict=True)
    ]
    return items, config


def compute_score_batch(
    data_sources: Sequence[str | None],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Score a whole step's rows as one batch (deduplicated, run in parallel).

    ``options`` are the fields of :class:`~assay.integrations.RewardConfig` (``url``,
    ``executor``, ``reward``, ``limits``, ``stop_on_failure``, ``deadline_s``, ...), as
    keywords (veRL's ``reward_kwargs``) or as one ``config=RewardConfig(...)``; keywords
    veRL passes that are not options are ignored (logged once)."""
    items, config = _items(data_sources, solution_strs, ground_truths, extra_infos, options)
    return [_row(o) for o in _judging.judge_rows(items, config)]


async def compute_score_batch_async(
    data_sources: Sequence[str | None],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """:func:`compute_score_batch` for async reward loops."""
    items, config = _items(data_sources, solution_strs, ground_truths, extra_infos, options)
    return [_row(o) for o in await _judging.judge_rows_async(items, config)]


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Score one row (veRL's ``custom_reward_function`` signature); options as for
    :func:`compute_score_batch`. Rows of concurrent calls share the executor's batching."""
    batch = ([data_source], [solution_str], [ground_truth], [extra_info])
    return compute_score_batch(*batch, **options)[0]


async def compute_score_async(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """:func:`compute_score` for veRL's async reward loop."""
    batch = ([data_source], [solution_str], [ground_truth], [extra_info])
    return (await compute_score_batch_async(*batch, **options))[0]
