"""Cross-validation of expected outputs between references, and CodeT dual agreement.

Several references (MBPP and APPS list many; a labelled pool can be given) answer the same
inputs. An input on which they do not all agree is *ambiguous* and dropped: its expected
output is not settled by the task. A reference that disagrees with the others' strict
majority on more than :data:`SUSPECT_FRACTION` of the inputs is reported as *suspect*
(EvalPlus found wrong references this way).

With a pool of unlabelled candidate programs, :func:`dual_agreement` ranks candidates and
tests together, CodeT-style: a candidate scores by how many others agree with its outputs,
and a test (an input with one proposed output) by the scores of the candidates that give it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..formats.assay_suite import encode_value
from ..judge import values
from ..runner import Runner
from . import oracle

SUSPECT_FRACTION = 0.05


def key(value: Any) -> str:
    """A canonical text for a plain value (sets sorted), for grouping equal answers."""
    return json.dumps(encode_value(value), sort_keys=True)


@dataclass(frozen=True, slots=True)
class Agreement:
    ambiguous: tuple[int, ...]  # inputs the references do not all agree on
    suspects: tuple[int, ...]  # references that disagree with the majority too often
    disagreements: tuple[int, ...]  # per reference: inputs where it left the majority


def agree(answers: Sequence[Sequence[Any]], atol: float = 0.0, rtol: float = 0.0) -> Agreement:
    """``answers[r][i]``: reference r's plain answer on input i (None for "no answer")."""
    if not answers:
        return Agreement((), (), ())
    n = len(answers[0])
    ambiguous: list[int] = []
    off = [0] * len(answers)
    for i in range(n):
        column = [a[i] for a in answers]
        groups: list[list[int]] = []
        for r, v in enumerate(column):
            for g in groups:
                if values.equal(v, column[g[0]], atol, rtol):
                    g.append(r)
                    break
            else:
                groups.append([r])
        if len(groups) > 1:
            ambiguous.append(i)
            top = max(groups, key=len)
            if 2 * len(top) > len(answers):  # a strict majority exists
                for g in groups:
                    if g is not top:
                        for r in g:
                            off[r] += 1
    suspects = tuple(r for r, k in enumerate(off) if n and k / n > SUSPECT_FRACTION)
    return Agreement(tuple(ambiguous), suspects, tuple(off))


@dataclass(frozen=True, slots=True)
class DualRanking:
    candidate_scores: tuple[float, ...]
    #: (input index, output key, score), best first
    tests: tuple[tuple[int, str, float], ...]


def dual_agreement(outputs: Sequence[Sequence[str | None]]) -> DualRanking:
    """CodeT-style dual agreement on an unlabelled pool.

    ``outputs[c][i]`` is candidate c's answer on input i (a :func:`key`, or None when it
    gave none). A consensus set is the candidates with identical answers on every input;
    its score is (its size) x (inputs it answers), and each candidate gets its set's
    score. Each proposed test (input, output) scores the sum of the scores of the
    consensus sets that give it."""
    groups: dict[tuple[str | None, ...], list[int]] = {}
    for c, row in enumerate(outputs):
        groups.setdefault(tuple(row), []).append(c)
    cand = [0.0] * len(outputs)
    tests: dict[tuple[int, str], float] = {}
    for row, members in groups.items():
        score = float(len(members) * sum(v is not None for v in row))
        for c in members:
            cand[c] = score
        for i, v in enumerate(row):
            if v is not None:
                tests[(i, v)] = tests.get((i, v), 0.0) + score
    ranked = sorted(((i, v, s) for (i, v), s in tests.items()), key=lambda t: (-t[2], t[0], t[1]))
    return DualRanking(tuple(cand), tuple(ranked))


def rank_pool(
    runner: Runner,
    programs: Sequence[str],
    entry: str,
    inputs: list[list[Any]],
    contract: str = "",
) -> DualRanking:
    """Run every unlabelled candidate on ``inputs`` in the sandbox (one run each) and rank
    candidates and (input, output) tests by :func:`dual_agreement`. An input a candidate
    raises on, or cannot answer in time, counts as no answer."""
    outputs: list[list[str | None]] = []
    for code in programs:
        got = oracle.answers(runner, code, entry, inputs, contract)
        outputs.append([key(a.value) if a.status == "ok" else None for a in got])
    return dual_agreement(outputs)
