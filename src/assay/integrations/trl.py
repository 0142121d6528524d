"""TRL reward functions (``GRPOTrainer(reward_funcs=[...])``).

TRL calls a reward function as ``f(prompts=..., completions=..., **columns)``: one list entry
per generated completion, every other dataset column as a keyword list of the same length.
Completions are strings, or message lists (``[{"role": "assistant", "content": ...}]``) for
conversational datasets. The result is one float per completion, or ``None`` for a row this
function cannot judge (no readable tests, our sandbox failing, a deadline): TRL leaves
``None`` out of the reward instead of teaching the model that its program was wrong.

.. code-block:: python

    from assay.integrations.trl import make_reward_func
    trainer = GRPOTrainer(model=..., train_dataset=ds,
                          reward_funcs=[make_reward_func(column="verification_info")])

TRL logs each reward under the function's ``__name__`` (``assay_binary`` by default). Where
TRL passes its ``log_metric`` and ``log_extra`` hooks (TRL 1.16, the release tested, does),
each call also puts into the trainer's own logs the verdict mix (``<name>/accepted``,
``<name>/wrong_answer``, ...: the share of the step's rows with that verdict) and the share
of unusable rows (``<name>/unusable``: rewards of ``None``, masked), and adds the verdict of
each completion to TRL's completions table (column ``<name>_verdict``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, get_args

from ..errors import ValidationError
from ..judge import Submission, Verdict
from ._judging import Memo, Outcome, RewardConfig, judge_rows, judge_rows_async, prepare
from ._judging import resolve_config as _resolve

__all__ = [
    "GROUND_TRUTH_COLUMNS",
    "make_reward_func",
    "make_reward_func_async",
    "reward_func",
    "reward_func_async",
]

#: Columns searched, in order, when no column is named.
GROUND_TRUTH_COLUMNS = (
    "ground_truth",
    "verification_info",
    "input_output",
    "test_cases",
    "public_test_cases",
    "tests",
    "reward_model",
)

#: Keywords TRL passes that are not dataset columns.
_NOT_COLUMNS = frozenset({"completion_ids", "trainer_state", "log_extra", "log_metric"})

RewardFunc = Callable[..., list[float | None]]
AsyncRewardFunc = Callable[..., Coroutine[Any, Any, list[float | None]]]


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the last assistant message of a conversation
    (content given as a string or as a list of ``{"type": "text", "text": ...}`` parts)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        replies = [m for m in messages if m.get("role") == "assistant"] or messages
        if replies:
            content = replies[-1].get("content", "")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    raise ValidationError(
        "completions", f"expected a string or a list of messages, got {type(completion).__name__}"
    )


def _column(kwargs: Mapping[str, Any], column: str | None) -> str:
    if column is not None:
        if column not in kwargs:
            raise ValidationError(
                "column", f"dataset column {column!r} not passed; got: {', '.join(sorted(kwargs))}"
            )
        return column
    for name in GROUND_TRUTH_COLUMNS:
        if name in kwargs:
            return name
    raise ValidationError(
        "column",
        f"no ground-truth column among {', '.join(sorted(kwargs)) or 'none'}; "
        f"expected one of {GROUND_TRUTH_COLUMNS} or name it with make_reward_func(column=...)",
    )


def _items(
    completions: Sequence[Any], kwargs: Mapping[str, Any], column: str | None, config: RewardConfig
) -> list[Submission | Outcome]:
    name = _column(kwargs, column)
    truths = kwargs[name]
    n = len(completions)
    if len(truths) != n:
        raise ValidationError(name, f"{len(truths)} values for {n} completions")
    # Other same-length columns are the row's extra information (LiveCodeBench's
    # ``metadata`` with the function name, a ``language`` column, ids).
    extra_cols = {
        k: v
        for k, v in kwargs.items()
        if k != name and k not in _NOT_COLUMNS and isinstance(v, list) and len(v) == n
    }
    memo = Memo()
    items: list[Submission | Outcome] = []
    for i, completion in enumerate(completions):
        extra = {k: v[i] for k, v in extra_cols.items()}
        if truths[i] is None:
            items.append(Outcome("invalid_input", None, 0, 0, f"{name}: no tests for this row"))
            continue
        items.append(
            prepare(completion_text(completion), truths[i], config, extra_info=extra, memo=memo)
        )
    return items


#: The verdicts whose share of a step is logged (every one, every step: TRL averages a
#: metric over the steps that logged it, so a verdict left out of a step would be skewed).
VERDICTS: tuple[str, ...] = get_args(Verdict)


def _rewards(
    outcomes: list[Outcome], name: str = "", hooks: Mapping[str, Any] | None = None
) -> list[float | None]:
    """The rewards of ``outcomes``; with TRL's hooks in ``hooks``, the step's verdict mix
    and share of unusable rows go to the trainer's logs too."""
    if hooks and outcomes:
        log_metric, log_extra = hooks.get("log_metric"), hooks.get("log_extra")
        n = len(outcomes)
        if callable(log_metric):
            for verdict in VERDICTS:
                log_metric(f"{name}/{verdict}", sum(o.verdict == verdict for o in outcomes) / n)
            log_metric(f"{name}/unusable", sum(o.reward is None for o in outcomes) / n)
        if callable(log_extra):
            log_extra(f"{name}_verdict", [o.verdict for o in outcomes])
    return [o.reward for o in outcomes]


def _scorer(
    column: str | None, config: RewardConfig | None, options: Mapping[str, Any]
) -> tuple[RewardConfig, Callable[[Sequence[Any], Mapping[str, Any]], list[Submission | Outcome]]]:
    """The checked config and the row reader shared by the sync and async forms."""
    cfg, unknown = _resolve(config, options, "trl")
    if unknown:
        raise ValidationError(unknown[0], "not an option (see assay.integrations.RewardConfig)")
    return cfg, lambda completions, kwargs: _items(completions, kwargs, column, cfg)


def _name(config: RewardConfig, name: str | None) -> str:
    if name is not None:
        return name
    reward = config.reward
    return f"assay_{reward}" if isinstance(reward, str) else f"assay_{type(reward).__name__}"


def make_reward_func(
    column: str | None = "verification_info",
    *,
    config: RewardConfig | None = None,
    name: str | None = None,
    **options: Any,
) -> RewardFunc:
    """A TRL reward function judging ``column`` (None: the first of
    :data:`GROUND_TRUTH_COLUMNS` present).

    Options are the fields of :class:`~assay.integrations.RewardConfig`, as keywords
    (``url=``, ``reward="fraction"``, ``limits=Limits(time_s=1)``, ``stop_on_failure=``,
    ``deadline_s=``...) or as one ``config=``; ``language`` is used when a row does not
    name one (a ``language`` column or the ground truth's own). They are checked now, so a
    misconfiguration fails before training starts. ``name`` is what TRL logs the reward
    under (default ``assay_<reward>``)."""
    cfg, rows = _scorer(column, config, options)

    label = _name(cfg, name)

    def func(
        prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any
    ) -> list[float | None]:
        return _rewards(judge_rows(rows(completions, kwargs), cfg), label, kwargs)

    func.__name__ = func.__qualname__ = label
    return func


def make_reward_func_async(
    column: str | None = "verification_info",
    *,
    config: RewardConfig | None = None,
    name: str | None = None,
    **options: Any,
) -> AsyncRewardFunc:
    """:func:`make_reward_func` as a coroutine function (TRL awaits async reward functions
    concurrently with the other reward functions)."""
    cfg, rows = _scorer(column, config, options)

    label = _name(cfg, name)

    async def func(
        prompts: Any = None, completions: Sequence[Any] = (), **kwargs: Any
    ) -> list[float | None]:
        return _rewards(await judge_rows_async(rows(completions, kwargs), cfg), label, kwargs)

    func.__name__ = func.__qualname__ = label
    return func


_DEFAULT = RewardConfig(caller="trl")


def reward_func(prompts: Any, completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """Binary reward, embedded executor, ground truth from the first known column present."""
    outcomes = judge_rows(_items(completions, kwargs, None, _DEFAULT), _DEFAULT)
    return _rewards(outcomes, "reward_func", kwargs)


async def reward_func_async(
    prompts: Any, completions: Sequence[Any], **kwargs: Any
) -> list[float | None]:
    """:func:`reward_func` as a coroutine function."""
    outcomes = await judge_rows_async(_items(completions, kwargs, None, _DEFAULT), _DEFAULT)
    return _rewards(outcomes, "reward_func_async", kwargs)
