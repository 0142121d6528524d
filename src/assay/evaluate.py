"""``assay eval``: judge a file of samples against a dataset, with progress and a summary."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import formats
from .errors import ValidationError
from .executor import JobResult, LocalExecutor
from .formats import evalplus
from .formats._io import read_records
from .judge import Judgement, Problem, Submission
from .judge.limits import derive_time_limit
from .runner import Runner

#: How the reason of a row that could not be judged begins (for people; programs read the
#: row's ``judged`` field).
NOT_JUDGED = "not judged:"

PROMPT_PREFIXED = ("humaneval", "humanevalplus", "humaneval-x", "multipl-e", "assay")


@dataclass(frozen=True, slots=True)
class Sample:
    task_id: str
    index: int
    code: str


def read_samples(path: str | Path, problems: dict[str, Problem], fmt: str) -> list[Sample]:
    """Rows ``{"task_id", "completion"}`` (the body after the prompt) or ``{"task_id",
    "solution"}`` (a whole program); ``sample_index`` counts per task in input order."""
    counts: Counter[str] = Counter()
    out: list[Sample] = []
    for n, row in enumerate(read_records(path), start=1):
        task = str(row.get("task_id", ""))
        if task not in problems:
            raise ValidationError(
                f"samples line {n}: task_id", f"{task!r} is not a task of the dataset"
            )
        if "solution" in row:
            code = row["solution"]
        elif "completion" in row:
            prompt = problems[task].metadata.get("prompt", "") if fmt in PROMPT_PREFIXED else ""
            code = prompt + row["completion"]
        else:
            raise ValidationError(f"samples line {n}", "needs a 'completion' or a 'solution'")
        if not isinstance(code, str):
            raise ValidationError(f"samples line {n}", "code must be a string")
        out.append(Sample(task, counts[task], code))
        counts[task] += 1
    return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of Chen et al. (2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def evaluate(
    dataset: str | Path,
    fmt: str,
    samples_path: str | Path,
    out_path: str | Path,
    *,
    tests: str = "plus",
    workers: int = 2,
    runner: Runner | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    records: str | Path | None = None,
    cache: bool = True,
    on_start: Callable[[int], None] | None = None,
    language: str | None = None,
    stop_on_failure: bool = False,
    time_limit: float | str = "derive",
) -> list[dict[str, Any]]:
    """Judge every sample on a :class:`LocalExecutor`; write a JSON row per sample as it ends.

    ``records`` is where execution records go (a directory, an fsspec URL, or ``"off"``);
    ``on_start`` gets the number of samples once they are read. With ``stop_on_failure`` a
    sample's judging ends at its first failed test: verdicts and rewards are the same, and
    ``passed`` counts the tests that passed before it.

    Each row says ``judged``: False when the task itself could not be judged (its
    expected outputs could not be computed), with ``verdict`` sandbox_error and no reward.

    ``time_limit``: ``"derive"`` (default) sets each task's CPU limit from its reference,
    max(1 s, 4 x the reference's CPU time), unless the dataset gives limits
    (:data:`~assay.formats.GIVEN_LIMITS`); ``"format"`` keeps the format's own default (e.g.
    human-eval's 3 s); a number sets that many seconds for every task. Each row records the
    limit it was judged under (``time_limit_s``).
    """
    own = runner is None
    runner = runner or Runner()
    try:
        problems = {p.id: p for p in formats.load(dataset, fmt, tests, runner, language)}
        samples = read_samples(samples_path, problems, fmt)
        ready, broken = _with_expected(runner, problems, {s.task_id for s in samples}, workers)
        ready = with_time_limits(runner, ready, fmt, time_limit, workers)
        if on_start is not None:
            on_start(len(samples))
        judged = [s for s in samples if s.task_id in ready]
        rows: list[dict[str, Any]] = []
        with (
            open(out_path, "w") as fh,
            LocalExecutor(runner, slots=max(1, workers), records=records, cache=cache) as ex,
        ):

            def emit(row: dict[str, Any]) -> None:
                fh.write(json.dumps(row) + "\n")
                fh.flush()  # a crash loses at most the rows still running
                rows.append(row)
                if on_result is not None:
                    on_result(row)

            # A task whose expected outputs could not be computed cannot be judged: its
            # samples get no reward (None, as for any failure of ours), with the reason.
            for s in samples:
                if s.task_id in broken:
                    emit(
                        _row(
                            s,
                            Judgement("sandbox_error", [], None, broken[s.task_id], judged=False),
                            total=len(problems[s.task_id].tests),
                            time_limit_s=problems[s.task_id].limits.time_s,
                        )
                    )
            handle = ex.submit(
                [
                    Submission(
                        ready[s.task_id],
                        s.code,
                        str(ready[s.task_id].metadata.get("language", language or "python")),
                    )
                    for s in judged
                ],
                caller="assay-eval",
                stop_on_failure=stop_on_failure,
            )
            for result in handle:
                s = judged[result.index]
                emit(
                    _row(
                        s,
                        result,
                        total=len(problems[s.task_id].tests),
                        time_limit_s=ready[s.task_id].limits.time_s,
                    )
                )
    finally:
        if own:
            runner.close()
    rows.sort(key=lambda r: (r["task_id"], r["sample_index"]))
    return rows


def _row(
    s: Sample, result: JobResult | Judgement, *, total: int, time_limit_s: float
) -> dict[str, Any]:
    """One output row, from the executor's result or from a judgement made here (a task
    that could not be judged)."""
    judgement = result.judgement if isinstance(result, JobResult) else result
    return {
        "task_id": s.task_id,
        "sample_index": s.index,
        "verdict": result.verdict,
        "reward": result.reward,
        "passed": judgement.passed if judgement is not None else 0,
        "total": total,
        "time_limit_s": time_limit_s,
        "judged": judgement.judged if judgement is not None else True,
        "reason": result.reason[:500],
    }


def _with_expected(
    runner: Runner, problems: dict[str, Problem], tasks: set[str], workers: int
) -> tuple[dict[str, Problem], dict[str, str]]:
    """Problems ready to judge (EvalPlus expected outputs computed in the sandbox, once per
    task that has samples), and why each task that cannot be judged cannot: its reference
    did not answer every input within the task's limits."""
    pending = [t for t in sorted(tasks) if problems[t].metadata.get("expected_pending")]
    ready = {t: problems[t] for t in tasks}
    broken: dict[str, str] = {}

    def fill(task: str) -> Problem | str:
        try:
            return evalplus.with_expected(runner, problems[task])
        except ValidationError as exc:
            return f"{NOT_JUDGED} {exc}"

    if pending:
        with ThreadPoolExecutor(max(1, workers)) as pool:
            for task, got in zip(pending, pool.map(fill, pending), strict=True):
                if isinstance(got, str):
                    broken[task] = got
                    del ready[task]
                else:
                    ready[task] = got
    return ready, broken


def with_time_limits(
    runner: Runner,
    problems: dict[str, Problem],
    fmt: str,
    time_limit: float | str,
    workers: int = 2,
) -> dict[str, Problem]:
    """``problems`` with the CPU time limits ``time_limit`` asks for (see :func:`evaluate`);
    derived limits are computed once per task, ``workers`` at a time."""
    if time_limit == "format" or (time_limit == "derive" and fmt in formats.GIVEN_LIMITS):
        return problems
    if isinstance(time_limit, str) and time_limit != "derive":
        raise ValidationError("time_limit", "must be 'derive', 'format' or a number of seconds")
    if not isinstance(time_limit, str):
        seconds = float(time_limit)
        if not (0 < seconds <= 3600):
            raise ValidationError("time_limit", "must be between 0 and 3600 seconds")
        return {t: _limited(p, seconds, "--time-limit") for t, p in problems.items()}

    def derive(problem: Problem) -> Problem:
        if str(problem.metadata.get("language", "python")) != "python" or not problem.references:
            return problem  # the format's default: no Python reference to time
        return derive_time_limit(runner, problem)

    tasks = sorted(problems)
    with ThreadPoolExecutor(max(1, workers)) as pool:
        return dict(zip(tasks, pool.map(lambda t: derive(problems[t]), tasks), strict=True))


def _limited(problem: Problem, seconds: float, source: str) -> Problem:
    meta = {**problem.metadata, "time_limit_s": seconds, "time_limit_source": source}
    return replace(problem, limits=replace(problem.limits, time_s=seconds), metadata=meta)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    per_task: defaultdict[str, list[bool]] = defaultdict(list)
    for r in rows:
        per_task[r["task_id"]].append(r["verdict"] == "accepted")
    n_min = min((len(v) for v in per_task.values()), default=0)
    passk = {
        f"pass@{k}": sum(pass_at_k(len(v), sum(v), k) for v in per_task.values()) / len(per_task)
        for k in (1, 10, 100)
        if per_task and n_min >= k
    }
    return {
        "samples": len(rows),
        "tasks": len(per_task),
        "accepted": sum(r["verdict"] == "accepted" for r in rows),
        "verdicts": dict(Counter(r["verdict"] for r in rows).most_common()),
        **passk,
    }
