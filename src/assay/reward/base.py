"""The reward interface: a judgement (and its problem) in, a :class:`RewardResult` out.

A reward of ``None`` means "not usable as a training signal" (principle 5): the run hit
our infrastructure, or a needed measurement is missing. It is never folded into 0, because
a trainer would then punish the model for our faults.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, final, runtime_checkable

from ..errors import ValidationError
from ..judge import Judgement, Problem, Submission


@dataclass(frozen=True, slots=True)
class RewardResult:
    """A reward value with the reason for it and the parts it was made of.

    ``components`` names the numbers behind ``value`` (e.g. ``cpu_s`` and
    ``reference_cpu_s``), so a trainer can log them; ``None`` marks a part that could not
    be measured.
    """

    value: float | None
    reason: str
    components: dict[str, float | None] = field(default_factory=dict)


@runtime_checkable
class RewardFn(Protocol):
    """Turns a judgement into a reward.

    ``submission`` is optional and keyword-only: only rewards that look at the source
    (quality) need it; the others ignore it.
    """

    def __call__(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult: ...


def unusable(judgement: Judgement) -> RewardResult | None:
    """``RewardResult(None, ...)`` if the judgement holds a sandbox_error, else ``None``.

    Every reward calls this first: a judgement with any infrastructure failure in it says
    nothing about the program, whatever the other tests did.
    """
    if judgement.verdict == "sandbox_error":
        return RewardResult(None, f"sandbox_error (not the program's fault): {judgement.reason}")
    bad = next((t for t in judgement.tests if t.verdict == "sandbox_error"), None)
    if bad is not None:
        return RewardResult(
            None, f"test {bad.index}: sandbox_error (not the program's fault): {bad.message}"
        )
    return None


class Reward(ABC):
    """Base of Assay's rewards: the "unusable judgement -> None" rule lives here, once.

    :meth:`__call__` returns :func:`unusable`'s answer for a judgement with any
    sandbox_error in it and only otherwise asks :meth:`score`, so a subclass writes its
    score alone and cannot forget the rule (overriding ``__call__`` is refused), as a DMOJ
    grader overrides one method of its base grader.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__call__" in vars(cls):
            raise TypeError(
                f"{cls.__name__} overrides Reward.__call__: write score() instead, so the "
                "unusable-judgement rule stays in force"
            )

    @final
    def __call__(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        bad = unusable(judgement)
        if bad is not None:
            return bad
        return self.score(judgement, problem, submission=submission)

    @abstractmethod
    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        """The reward of a usable judgement (no sandbox_error in it)."""


#: Name -> factory; keyword options of :func:`get` go to the factory. Filled by the package
#: (``assay.reward``) with Assay's rewards; here so that a reward made of others (the
#: composite) can build them by name without importing the package that imports it.
REGISTRY: dict[str, Callable[..., RewardFn]] = {}


def get(name: str, **options: Any) -> RewardFn:
    """A reward by name, e.g. ``get("composite", weights={"binary": 1.0, "efficiency": 0.2})``."""
    try:
        factory = REGISTRY[name]
    except KeyError:
        raise ValidationError(
            "reward", f"unknown reward {name!r}; known: {', '.join(sorted(REGISTRY))}"
        ) from None
    return factory(**options)
