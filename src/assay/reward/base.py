"""The reward interface: a judgement (and its problem) in, a :class:`RewardResult` out.

A reward of ``None`` means "not usable as a training signal" (principle 5): the run hit
our infrastructure, or a needed measurement is missing. It is never folded into 0, because
a trainer would then punish the model for our faults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

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
