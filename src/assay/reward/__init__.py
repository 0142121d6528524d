"""The reward layer: judgements in, rewards out (binary, pass rate, efficiency, quality).

Every reward is a :class:`RewardFn`; Assay's own derive from :class:`Reward`, which returns
``None`` for an unusable judgement before a subclass's ``score`` is asked. :func:`get`
builds one by name. A reward of ``None``
means the run is not usable as a training signal (our fault, or a missing measurement),
and is never silently turned into 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ValidationError
from .base import Reward, RewardFn, RewardResult
from .binary import BinaryReward
from .composite import CompositeReward
from .efficiency import EfficiencyReward
from .fraction import FractionReward, WeightedFractionReward
from .memory import MemoryReward
from .quality import QualityReward

#: Name -> factory; keyword options of :func:`get` go to the factory.
REGISTRY: dict[str, Callable[..., RewardFn]] = {
    "binary": BinaryReward,
    "fraction": FractionReward,
    "weighted": WeightedFractionReward,
    "efficiency": EfficiencyReward,
    "memory": MemoryReward,
    "quality": QualityReward,
    "composite": CompositeReward,
}


def get(name: str, **options: Any) -> RewardFn:
    """A reward by name, e.g. ``get("composite", weights={"binary": 1.0, "efficiency": 0.2})``."""
    try:
        factory = REGISTRY[name]
    except KeyError:
        raise ValidationError(
            "reward", f"unknown reward {name!r}; known: {', '.join(sorted(REGISTRY))}"
        ) from None
    return factory(**options)


__all__ = [
    "REGISTRY",
    "BinaryReward",
    "CompositeReward",
    "EfficiencyReward",
    "FractionReward",
    "MemoryReward",
    "QualityReward",
    "Reward",
    "RewardFn",
    "RewardResult",
    "WeightedFractionReward",
    "get",
]
