"""A weighted sum of named rewards, e.g. ``{"binary": 1.0, "efficiency": 0.2}``.

Any component that is ``None`` and has a positive weight makes the whole reward ``None``:
a composite with a missing part is a different reward, and feeding it to a trainer as if
it were the full one would be wrong feedback.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import ValidationError
from ..judge import Judgement, Problem, Submission
from .base import Reward, RewardFn, RewardResult, get


class CompositeReward(Reward):
    """``sum(w * r) / sum(w)`` over named rewards (``normalize=False``: without the divide).

    Names are looked up in the registry (:func:`assay.reward.get`) unless an instance is
    given in ``components`` (e.g. an :class:`EfficiencyReward` with its reference).
    """

    def __init__(
        self,
        weights: Mapping[str, float],
        components: Mapping[str, RewardFn] | None = None,
        normalize: bool = True,
    ) -> None:
        if not weights:
            raise ValidationError("weights", "a composite needs at least one named component")
        for name, w in weights.items():
            if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w):
                raise ValidationError(f"weights.{name}", f"must be a finite number, got {w!r}")
            if w < 0:
                raise ValidationError(f"weights.{name}", f"must be >= 0, got {w}")
            if name == "composite":
                raise ValidationError(f"weights.{name}", "a composite cannot contain itself")
        self.total_weight = float(sum(weights.values()))
        if self.total_weight <= 0:
            raise ValidationError("weights", "weights sum to 0")
        given = dict(components or {})
        extra = sorted(set(given) - set(weights))
        if extra:
            raise ValidationError("components", f"no weight for {', '.join(extra)}")
        self.weights = {name: float(w) for name, w in weights.items()}
        self.components: dict[str, RewardFn] = {
            name: given[name] if name in given else get(name) for name in weights
        }
        self.normalize = normalize

    def close(self) -> None:
        """Close components that hold resources (a quality reward's own sandbox pool)."""
        for fn in self.components.values():
            close = getattr(fn, "close", None)
            if callable(close):
                close()

    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        values: dict[str, float | None] = {}
        missing: list[str] = []
        total = 0.0
        for name, fn in self.components.items():
            part = fn(judgement, problem, submission=submission)
            values[name] = part.value
            weight = self.weights[name]
            if part.value is None:
                if weight > 0:
                    missing.append(f"{name}: {part.reason}")
                continue
            total += weight * part.value
        if missing:
            return RewardResult(None, "missing component(s): " + "; ".join(missing), values)
        value = total / self.total_weight if self.normalize else total
        parts = ", ".join(
            f"{n}={v:.3g}x{self.weights[n]:g}" for n, v in values.items() if v is not None
        )
        return RewardResult(value, parts, values)
