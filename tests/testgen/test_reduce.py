from __future__ import annotations

import random

from assay.testgen.reduce import cover


def test_reduction_keeps_every_kill_and_line() -> None:
    rng = random.Random(5)
    for _ in range(200):
        hits = [
            frozenset(rng.sample(range(30), rng.randint(0, 6))) for _ in range(rng.randint(1, 40))
        ]
        chosen = cover(hits)
        everything = set().union(*hits)
        assert set().union(*(hits[i] for i in chosen)) == everything
        assert len(chosen) == len(set(chosen)) <= len(hits)


def test_k_cover_keeps_k_tests_per_element_where_there_are_k() -> None:
    hits = [frozenset({"m1"}), frozenset({"m1", "m2"}), frozenset({"m1"}), frozenset({"m3"})]
    chosen = cover(hits, k=2)
    per = {e: sum(e in hits[i] for i in chosen) for e in ("m1", "m2", "m3")}
    assert per == {"m1": 2, "m2": 1, "m3": 1}


def test_greedy_prefers_tests_that_hit_more_and_keeps_required_first() -> None:
    hits = [frozenset({1}), frozenset({2}), frozenset({1, 2, 3}), frozenset()]
    assert cover(hits) == [2]
    assert cover(hits, required=[3]) == [3, 2]
