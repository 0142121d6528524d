"""``assay eval``: judge a file of samples against a dataset, with progress and a summary."""

from __future__ import annotations

import json
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import formats
from .errors import ValidationError
from .formats import evalplus
from .formats._io import read_records
from .judge import Judge, Problem, Submission
from .runner import Runner

PROMPT_PREFIXED = ("humaneval", "humanevalplus", "humaneval-x")


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
    tests: str = "plus",
    workers: int = 2,
    runner: Runner | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    own = runner is None
    runner = runner or Runner()
    try:
        problems = {p.id: p for p in formats.load(dataset, fmt, tests, runner)}
        samples = read_samples(samples_path, problems, fmt)
    except BaseException:
        if own:
            runner.close()
        raise
    judge = Judge(runner)
    ready: dict[str, Problem] = {}
    locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
    guard = threading.Lock()

    def problem_for(task: str) -> Problem:
        with guard:
            lock = locks[task]
        with lock:  # EvalPlus expected values: computed once per task, in the sandbox
            if task not in ready:
                p = problems[task]
                ready[task] = (
                    evalplus.with_expected(runner, p) if p.metadata.get("expected_pending") else p
                )
            return ready[task]

    def one(s: Sample) -> dict[str, Any]:
        j = judge.judge(Submission(problem_for(s.task_id), s.code))
        return {
            "task_id": s.task_id,
            "sample_index": s.index,
            "verdict": j.verdict,
            "reward": j.reward,
            "passed": j.passed,
            "total": len(problems[s.task_id].tests),
            "reason": j.reason[:500],
        }

    rows: list[dict[str, Any]] = []
    try:
        with open(out_path, "w") as fh, ThreadPoolExecutor(max(1, workers)) as pool:
            futures = [pool.submit(one, s) for s in samples]
            for fut in as_completed(futures):
                row = fut.result()
                fh.write(json.dumps(row) + "\n")
                fh.flush()  # a crash loses at most the rows still running
                rows.append(row)
                if on_result is not None:
                    on_result(row)
    finally:
        if own:
            runner.close()
    rows.sort(key=lambda r: (r["task_id"], r["sample_index"]))
    return rows


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
