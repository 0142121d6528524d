from __future__ import annotations

from assay import Runner
from assay.testgen.crossval import agree, dual_agreement, key, rank_pool


def test_two_references_that_disagree_make_their_inputs_ambiguous() -> None:
    a = agree([[1, 2, 3, 4], [1, 2, 30, 40]])
    assert a.ambiguous == (2, 3)
    assert a.suspects == ()  # no majority between two: nobody is singled out


def test_a_reference_against_the_majority_is_suspect() -> None:
    good = list(range(40))
    bad = [*range(35), 0, 0, 0, 0, 0]
    a = agree([good, good, bad])
    assert a.suspects == (2,)
    assert a.disagreements == (0, 0, 5)


def test_floats_agree_within_tolerance() -> None:
    assert agree([[0.1 + 0.2], [0.3]], atol=1e-9).ambiguous == ()


def test_dual_agreement_ranks_the_consensus_first() -> None:
    outputs = [["1", "2"], ["1", "2"], ["1", "2"], ["9", "2"], ["1", None]]
    r = dual_agreement(outputs)
    assert r.candidate_scores[0] == r.candidate_scores[1] == 6.0
    assert r.candidate_scores[3] == 2.0
    assert r.candidate_scores[4] == 1.0
    # (input 1, "2") is given by every consensus set but the one that answered nothing
    assert r.tests[:2] == ((1, "2", 8.0), (0, "1", 7.0))
    assert (0, "9", 2.0) in r.tests


def test_rank_pool_runs_candidates_in_the_sandbox(runner: Runner) -> None:
    right = "def f(x):\n    return x * 2\n"
    pool = [
        right,
        right,
        "def f(x):\n    return x + x\n",
        "def f(x):\n    return x + 2\n",
        "def f(x):\n    raise ValueError\n",
    ]
    r = rank_pool(runner, pool, "f", [[1], [3], [5]])
    scores = r.candidate_scores
    assert scores[0] == scores[1] == scores[2] > scores[3] > scores[4] == 0.0
    best = {i: v for i, v, _ in r.tests[:3]}
    assert best == {0: key(2), 1: key(6), 2: key(10)}
