"""The registry in assay/reward/__init__.py and the top-level exports."""

from __future__ import annotations

import pytest

from assay import ValidationError
from assay import reward as rewards


def test_names() -> None:
    assert set(rewards.REGISTRY) == {
        "binary",
        "fraction",
        "weighted",
        "efficiency",
        "memory",
        "quality",
        "composite",
    }


@pytest.mark.parametrize("name", ["binary", "fraction", "weighted", "efficiency", "memory"])
def test_get_builds_a_reward_fn(name: str) -> None:
    fn = rewards.get(name)
    assert isinstance(fn, rewards.RewardFn)


def test_get_with_options() -> None:
    fn = rewards.get("efficiency", reference_cpu_s=0.5)
    assert isinstance(fn, rewards.EfficiencyReward) and fn.reference_cpu_s == 0.5
    c = rewards.get("composite", weights={"binary": 1.0})
    assert isinstance(c, rewards.CompositeReward)
    q = rewards.get("quality")
    assert isinstance(q, rewards.QualityReward)
    q.close()


def test_unknown_name() -> None:
    with pytest.raises(ValidationError) as e:
        rewards.get("speed")
    assert e.value.field == "reward" and "binary" in e.value.message
