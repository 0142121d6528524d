"""The per-problem quality report and the suite-level summary.

Each generated problem carries its report in ``metadata["quality"]``: candidates per
strategy, inputs kept and dropped (with the reasons and one example message each),
ambiguous inputs and suspect references, mutants (killed, likely equivalent, stillborn),
mutation score, line coverage of the reference, the size of the cover and of the suite, and
whether the problem passes the quality gate (``fit_for_training``).
"""

from __future__ import annotations

import statistics
from typing import Any

from rich.table import Table

from ..judge import Problem


def quality(problem: Problem) -> dict[str, Any]:
    q = problem.metadata.get("quality")
    return q if isinstance(q, dict) else {}


def gate(score: float | None, min_mutation_score: float) -> dict[str, Any]:
    """The report's quality-gate keys, for every generator and for a gate re-evaluated
    later (``with_gate``): the threshold, and whether the mutation score reaches it (a suite
    with no mutant to score passes: nothing shows it weak)."""
    return {
        "min_mutation_score": min_mutation_score,
        "fit_for_training": (score if score is not None else 1.0) >= min_mutation_score,
    }


def summary(problems: list[Problem], threshold: float = 0.9) -> dict[str, Any]:
    """Suite-level numbers: tests per task, mutation scores, coverage, the gate."""
    qs = [quality(p) for p in problems]
    scores = [q["mutation_score"] for q in qs if q.get("mutation_score") is not None]
    cover = [q["coverage"] for q in qs if q.get("coverage") is not None]
    sizes = [len(p.tests) for p in problems]
    return {
        "problems": len(problems),
        "tests_total": sum(sizes),
        "tests_per_task_median": statistics.median(sizes) if sizes else 0,
        "cover_size_median": statistics.median([q.get("cover_size", 0) for q in qs]) if qs else 0,
        "mutation_score_median": round(statistics.median(scores), 4) if scores else None,
        "mutation_score_at_least": threshold,
        "tasks_at_threshold": sum(s >= threshold for s in scores),
        "tasks_with_mutants": len(scores),
        "share_at_threshold": round(sum(s >= threshold for s in scores) / len(scores), 4)
        if scores
        else None,
        "coverage_median": round(statistics.median(cover), 4) if cover else None,
        "fit_for_training": sum(bool(q.get("fit_for_training")) for q in qs),
        "suspect_references": sum(bool(q.get("suspect_references")) for q in qs),
        "ambiguous_inputs": sum(int(q.get("ambiguous", 0)) for q in qs),
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def table(problems: list[Problem]) -> Table:
    t = Table(title="test suite quality")
    for col in (
        "problem",
        "tests",
        "cover",
        "kept",
        "dropped",
        "ambiguous",
        "suspect refs",
        "mutants k/n",
        "mut. score",
        "coverage",
        "fit",
    ):
        t.add_column(col, justify="left" if col in ("problem", "dropped") else "right")
    for p in problems:
        q = quality(p)
        dropped = ", ".join(f"{k} {v}" for k, v in (q.get("dropped") or {}).items()) or "-"
        t.add_row(
            p.id,
            str(len(p.tests)),
            _fmt(q.get("cover_size")),
            _fmt(q.get("kept")),
            dropped,
            _fmt(q.get("ambiguous")),
            ", ".join(map(str, q.get("suspect_references") or [])) or "-",
            f"{q.get('mutants_killed', 0)}/{q.get('mutants_killable', 0)}",
            _fmt(q.get("mutation_score")),
            _fmt(q.get("coverage")),
            "yes" if q.get("fit_for_training") else "NO",
        )
    return t
