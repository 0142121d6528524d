"""Repair tasks from real model bugs: CodeT's CodeGen samples of HumanEval.

``microsoft/CodeT``'s ``humaneval-codegen16b-100-samples.jsonl`` has one row per HumanEval
task (in the order of the task ids sorted as strings) with 100 completions. A repair task is
a workspace whose ``solution.py`` is the prompt plus one sample that fails HumanEval's tests
(judged here, in the sandbox, by :class:`assay.Judge`); the hidden test file is HumanEval's
``check``, one pytest function per ``assert`` where the check is only asserts; the
reference patch is the diff from the sample to the canonical solution.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .._pysource import missing_modules, parse_quietly
from ..errors import ValidationError
from ..formats import humaneval
from ..formats._io import read_records
from ..judge import Judge, Submission
from ..runner import Runner
from .patch import unified_diff
from .types import AgentTask

TEST_FILE = "test_hidden.py"


def hidden_tests(rec: dict[str, Any]) -> str:
    """HumanEval's test code as a pytest file against ``solution.py``: one ``test_*`` per
    assert of ``check`` when the check is only asserts, else one test calling ``check``."""
    entry, test = rec["entry_point"], rec["test"]
    head = f'"""Hidden tests of {rec["task_id"]} (openai/human-eval\'s check)."""\n\n'
    head += f"from solution import {entry} as candidate\n\n{test.strip()}\n"
    try:
        tree = parse_quietly(test)
    except SyntaxError:
        tree = None
    check = next(
        (
            n
            for n in (tree.body if tree else [])
            if isinstance(n, ast.FunctionDef) and n.name == "check"
        ),
        None,
    )
    body = [
        n
        for n in (check.body if check else [])
        if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
    ]
    if body and all(isinstance(n, ast.Assert) for n in body):
        tests = [
            f"\n\ndef test_assert_{i:02d}():\n    {ast.unparse(n)}\n" for i, n in enumerate(body)
        ]
        return head + "".join(tests)
    return head + "\n\ndef test_check():\n    check(candidate)\n"


def repair_task(
    rec: dict[str, Any], sample: str, index: int, tests: str | None = None
) -> AgentTask:
    """The repair task of HumanEval record ``rec`` starting from completion ``sample``;
    ``tests`` is the hidden test file (default: HumanEval's check, :func:`hidden_tests`)."""
    solution = rec["prompt"] + sample
    canonical = rec["prompt"] + rec["canonical_solution"]
    before = {"solution.py": solution.encode()}
    patch = unified_diff(before, {"solution.py": canonical.encode()})
    return AgentTask(
        task_id=f"{rec['task_id']}/sample-{index}",
        instructions=(
            f"solution.py should define `{rec['entry_point']}` as its docstring describes, "
            "but it fails the task's tests. Find the bug and fix solution.py."
        ),
        files=before,
        tests={TEST_FILE: tests if tests is not None else hidden_tests(rec)},
        reference_patch=patch,
        strict_values=True,  # a function's values: a lying __eq__ must not pass
        metadata={
            "source": "microsoft/CodeT humaneval-codegen16b-100-samples",
            "humaneval_task": rec["task_id"],
            "sample_index": index,
            "entry_point": rec["entry_point"],
            "tests": "humaneval" if tests is None else "humanevalplus",
        },
    )


def _samples(path: Path) -> list[list[str]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            samples = row.get("samples") if isinstance(row, dict) else None
            if not isinstance(samples, list) or not all(isinstance(s, str) for s in samples):
                raise ValidationError(f"samples line {number}", "needs `samples`: a list of text")
            rows.append(samples)
    return rows


def from_samples(
    samples_path: str | Path,
    dataset_path: str | Path,
    runner: Runner,
    *,
    tasks: set[str] | None = None,
    per_task: int = 1,
    limit: int | None = None,
    plus_path: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[AgentTask]:
    """Repair tasks from failing samples: per HumanEval task (all, or those in ``tasks``),
    the first ``per_task`` distinct samples that the tests reject (not for want of a module
    nothing installs: such a task could not be verified), at most ``limit`` tasks
    in all. With ``plus_path`` (HumanEval+), the hidden tests are HumanEval+'s base and plus
    inputs (:mod:`assay.tasks.plus_tests`) and samples are judged on them; else HumanEval's
    check. ``progress`` is called with the number of samples judged."""
    from ..formats import evalplus
    from .plus_tests import render

    records = read_records(dataset_path)
    plus = {r["task_id"]: r for r in read_records(plus_path)} if plus_path else {}
    rows = _samples(Path(samples_path))
    ordered = sorted(records, key=lambda r: str(r["task_id"]))
    if len(rows) != len(ordered):
        raise ValidationError(
            "samples", f"{len(rows)} rows for {len(ordered)} tasks: not CodeT's HumanEval file"
        )
    judge = Judge(runner)
    made = 0
    for rec, samples in zip(ordered, rows, strict=True):
        if tasks is not None and rec["task_id"] not in tasks:
            continue
        tests_text = None
        if plus_path:
            prec = plus.get(rec["task_id"])
            if prec is None:
                raise ValidationError("plus", f"{rec['task_id']} is not in {plus_path}")
            base = evalplus.with_expected(runner, evalplus.problem(prec, "base"))
            problem = evalplus.with_expected(runner, evalplus.problem(prec, "plus"))
            tests_text = render(prec, base, list(problem.tests[len(base.tests) :]))
        else:
            problem = humaneval.problem(rec)
        seen: set[str] = set()
        kept = 0
        for index, sample in enumerate(samples):
            if sample in seen:
                continue
            seen.add(sample)
            judged = judge.judge(Submission(problem, rec["prompt"] + sample), stop_on_failure=True)
            if progress is not None:
                progress(1)
            if judged.verdict in ("accepted", "sandbox_error"):
                continue
            if missing_modules(judged.reason):
                # The sample imports a module nothing installs (CodeGen wrote `from register
                # import registerObj`): verification counts a test failing on a missing
                # module as the environment's fault (sessions/_outcomes), so a task made
                # from it could never be judged, whatever the agent did.
                continue
            yield repair_task(rec, sample, index, tests_text)
            made += 1
            kept += 1
            if limit is not None and made >= limit:
                return
            if kept >= per_task:
                break


__all__ = ["TEST_FILE", "from_samples", "hidden_tests", "repair_task"]
