"""Suite reduction: the smallest set of tests that keeps every mutant kill and covered line.

Greedy set (multi-)cover, as EvalPlus-mini: each element (a mutant, a line) asks to be hit
by ``k`` tests, or by all the tests that hit it when fewer do; the test meeting the most
outstanding demand is taken next, ties going to the earlier test (so the order of the pool
decides, and the same pool gives the same suite).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def cover(
    hits: Sequence[frozenset[Hashable]],
    k: int = 1,
    required: Sequence[int] = (),
) -> list[int]:
    """Indices of the chosen tests (``required`` first, then in the order chosen).

    ``hits[i]`` is what test ``i`` hits. Every element hit by some test ends hit by
    min(k, number of tests hitting it) chosen tests."""
    if k < 1:
        raise ValueError("k must be at least 1")
    counts: dict[Hashable, int] = {}
    for h in hits:
        for e in h:
            counts[e] = counts.get(e, 0) + 1
    demand = {e: min(k, c) for e, c in counts.items()}
    chosen: list[int] = []
    taken: set[int] = set()

    def take(i: int) -> None:
        chosen.append(i)
        taken.add(i)
        for e in hits[i]:
            if demand[e] > 0:
                demand[e] -= 1

    for i in required:
        if i not in taken:
            take(i)
    while True:
        best, gain = -1, 0
        for i, h in enumerate(hits):
            if i in taken:
                continue
            g = sum(1 for e in h if demand[e] > 0)
            if g > gain:
                best, gain = i, g
        if best < 0:
            return chosen
        take(best)
