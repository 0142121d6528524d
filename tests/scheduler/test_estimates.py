"""Runtime estimates: learned per key, general keys scaled by size, kept across restarts."""

from __future__ import annotations

from pathlib import Path

from assay.scheduler import ResultCache, RuntimeEstimator


def test_unknown_keys_use_the_default_scaled_by_size() -> None:
    est = RuntimeEstimator(default_s=0.1)
    assert est.estimate(["p1|python", "python"], size=10) == 1.0


def test_specific_key_wins_and_general_keys_are_per_unit() -> None:
    est = RuntimeEstimator()
    est.observe(["p1|python", "python"], seconds=2.0, size=4)
    assert est.estimate(["p1|python", "python"], size=4) == 2.0
    # another problem in the same language: 0.5 s per test
    assert est.estimate(["p2|python", "python"], size=10) == 5.0


def test_running_mean_moves_toward_new_observations() -> None:
    est = RuntimeEstimator()
    est.observe(["k"], 1.0)
    for _ in range(20):
        est.observe(["k"], 3.0)
    mean, n = est.known("k")  # type: ignore[misc]
    assert 2.9 < mean <= 3.0 and n == 21


def test_estimates_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "state" / "estimates.sqlite"
    est = RuntimeEstimator(db)
    est.observe(["slow|python", "python"], 7.0)
    est.close()
    again = RuntimeEstimator(db)
    assert again.estimate(["slow|python", "python"]) == 7.0
    again.close()


def test_cache_is_lru_bounded() -> None:
    cache: ResultCache[int] = ResultCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.hits == 3 and cache.misses == 1 and len(cache) == 2
