"""The reward layer: judgements in, rewards out (binary, pass rate, efficiency, quality).

Every reward is a :class:`RewardFn`; Assay's own derive from :class:`Reward`, which returns
``None`` for an unusable judgement before a subclass's ``score`` is asked. :func:`get`
builds one by name. A reward of ``None``
means the run is not usable as a training signal (our fault, or a missing measurement),
and is never silently turned into 0.
"""

from __future__ import annotations

from .base import REGISTRY, Reward, RewardFn, RewardResult, get
from .binary import BinaryReward
from .composite import CompositeReward
from .efficiency import EfficiencyReward
from .fraction import FractionReward, WeightedFractionReward
from .memory import MemoryReward
from .quality import QualityReward

REGISTRY.update(
    {
        "binary": BinaryReward,
        "fraction": FractionReward,
        "weighted": WeightedFractionReward,
        "efficiency": EfficiencyReward,
        "memory": MemoryReward,
        "quality": QualityReward,
        "composite": CompositeReward,
    }
)

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
