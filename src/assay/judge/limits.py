"""Time limits derived from a reference solution when the dataset gives none."""

from __future__ import annotations

from dataclasses import replace

from ..runner import Runner
from .calls import call_values
from .judge import Judge
from .types import Problem, Submission

#: The derived CPU limit per run: max(MIN_TIME_S, FACTOR x the reference's slowest test).
MIN_TIME_S = 1.0
FACTOR = 4.0


def derive_time_limit(runner: Runner, problem: Problem, language: str = "python") -> Problem:
    """Judge the first reference with generous limits and set ``limits.time_s`` to
    max(1 s, 4 x its slowest test's CPU time). The derived value and how it was obtained are
    recorded in ``metadata`` (``time_limit_s``, ``time_limit_source``)."""
    if not problem.references:
        return problem
    generous = replace(
        problem, limits=replace(problem.limits, time_s=max(problem.limits.time_s, 30.0))
    )
    j = Judge(runner).judge(Submission(generous, problem.references[0], language))
    if j.verdict != "accepted":
        return replace(
            problem, metadata={**problem.metadata, "time_limit_source": f"reference {j.verdict}"}
        )
    slowest = max((t.cpu_s for t in j.tests), default=0.0)
    calls = [
        (t.options["fn_name"], list(t.options["args"])) for t in problem.tests if t.kind == "call"
    ]
    if calls:  # call tests share one run, whose CPU time is what a limit applies to
        code = problem.references[0]
        _, run = call_values(
            runner, code.encode() if isinstance(code, str) else code, calls, generous.limits
        )
        slowest = max(slowest, run.cpu_s)
    time_s = round(max(MIN_TIME_S, FACTOR * slowest), 3)
    meta = {
        **problem.metadata,
        "time_limit_s": time_s,
        "time_limit_source": f"{FACTOR:g} x reference {slowest:.3f} s",
    }
    return replace(problem, limits=replace(problem.limits, time_s=time_s), metadata=meta)
