"""Shared shape of the efficiency and memory rewards: a measurement against a reference.

reward = min(1, max(reference, floor) / max(measured, floor)) for an accepted submission,
0 otherwise. Both sides are floored: below the floor, differences are measurement noise,
and a reference faster than the floor would otherwise make even the reference itself
score below 1.
"""

from __future__ import annotations

import math

from ..errors import ValidationError
from ..judge import Judgement, Problem, Submission
from .base import Reward, RewardResult


def reference(explicit: float | None, problem: Problem, key: str) -> float:
    """The caller's reference value, else ``problem.metadata[key]``; validated."""
    value = explicit if explicit is not None else problem.metadata.get(key)
    if value is None:
        raise ValidationError(
            key, f"no reference for problem {problem.id!r}: pass {key}= or set metadata[{key!r}]"
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(key, f"must be a finite number, got {value!r}")
    if value <= 0:
        raise ValidationError(key, f"must be > 0, got {value}")
    return float(value)


def check_floor(name: str, floor: float) -> float:
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not floor > 0:
        raise ValidationError(name, f"must be a number > 0, got {floor!r}")
    if not math.isfinite(floor):
        raise ValidationError(name, f"must be finite, got {floor!r}")
    return float(floor)


def relative(
    judgement: Judgement,
    measured: float,
    ref: float,
    floor: float,
    names: tuple[str, str],
    unit: str,
) -> RewardResult:
    """Score ``measured`` against ``ref``; ``names`` are the component keys (measured, ref).
    Called from a :meth:`Reward.score`, so the judgement is usable."""
    components: dict[str, float | None] = {names[0]: measured, names[1]: ref, "floor": floor}
    if judgement.verdict != "accepted":
        return RewardResult(0.0, f"not accepted ({judgement.verdict})", components)
    value = min(1.0, max(ref, floor) / max(measured, floor))
    return RewardResult(
        value, f"{measured:g}{unit} against reference {ref:g}{unit} (floor {floor:g})", components
    )


class RelativeReward(Reward):
    """A measurement of the judgement against a reference: a subclass names its metadata
    key, component names and unit, and says what it measures (:meth:`measure`)."""

    metadata_key: str
    names: tuple[str, str]
    unit: str

    def __init__(self, reference_value: float | None, floor: float) -> None:
        self._reference = reference_value
        self._floor = floor

    def measure(self, judgement: Judgement) -> tuple[float, float]:
        """The measured value and the floor that applies to it."""
        raise NotImplementedError

    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        ref = reference(self._reference, problem, self.metadata_key)
        measured, floor = self.measure(judgement)
        return relative(judgement, measured, ref, floor, self.names, self.unit)
