"""``assay tests …``: generate test suites from references, and report their quality.

A Typer sub-app of :mod:`assay.testgen`'s pipeline; :mod:`assay.cli` registers
:data:`tests_app` as ``assay tests``. Exit status as for every command: 0 on success, 2 for
usage errors, 3 when the sandbox failed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import AssayError, ValidationError
from ..formats import assay_suite
from ..formats._io import read_records
from ..testgen import report
from ..testgen.pipeline import Options, Task, generate_all, task_from_row, with_gate
from ..testgen.stdin import StdinTask, kattis_tasks
from ._common import EXIT_SANDBOX, EXIT_USAGE, console, err_console

__all__ = ["read_tasks", "tests_app"]

#: Dataset formats whose rows carry a prompt, an entry point and a reference.
ROW_FORMATS = ("tasks", "humaneval", "humanevalplus", "mbppplus")

tests_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Generate test suites from reference solutions and check their quality.",
)


def read_tasks(path: Path, fmt: str | None) -> list[Task] | list[StdinTask]:
    """Task rows ``{task_id, prompt, entry_point, reference}`` (``canonical_solution``,
    ``contract``, ``references`` optional). ``fmt`` names a dataset format whose rows have
    these fields (:data:`ROW_FORMATS`); only those fields are read, never a dataset's tests.
    ``kattis``: stdin problems (packages), whose given inputs seed token mutation."""
    if fmt == "kattis":
        return kattis_tasks(path)
    if fmt not in (None, *ROW_FORMATS):
        raise ValidationError(
            "format",
            f"{fmt!r}: test generation reads rows of {', '.join(ROW_FORMATS)}, or kattis packages",
        )
    records = read_records(path)
    out = []
    for n, rec in enumerate(records, start=1):
        row: dict[str, Any] = {
            k: rec[k]
            for k in (
                "task_id",
                "prompt",
                "entry_point",
                "reference",
                "canonical_solution",
                "contract",
                "references",
                "atol",
            )
            if k in rec
        }
        try:
            out.append(task_from_row(row))
        except ValidationError as exc:
            raise ValidationError(f"line {n}: {exc.field}", exc.message) from exc
    return out


@tests_app.command("generate")
def generate_cmd(
    problems: Annotated[
        Path, typer.Argument(help="Task rows (JSONL/JSON, optionally .gz), or Kattis packages.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write the suite (JSONL).")],
    seed: Annotated[int, typer.Option(help="Seed of every strategy: same seed, same suite.")] = 0,
    max_tests: Annotated[
        int, typer.Option("--max-tests", min=1, help="Tests per problem at most.")
    ] = 50,
    workers: Annotated[int, typer.Option(min=1, help="Problems generated at once.")] = 2,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Row format: tasks (default), humaneval, humanevalplus, mbppplus; or kattis "
            "(stdin problems: a package or a folder of them, with an input validator).",
        ),
    ] = None,
    min_mutation_score: Annotated[
        float,
        typer.Option(
            "--min-mutation-score",
            min=0.0,
            max=1.0,
            help="Quality gate: problems below it are marked not fit for training.",
        ),
    ] = 0.0,
    cover_k: Annotated[
        int, typer.Option("--cover-k", min=1, help="Tests per mutant kill and line kept.")
    ] = 2,
    no_fill: Annotated[
        bool, typer.Option("--no-fill", help="Keep only the reduced cover.")
    ] = False,
) -> None:
    """Generate a checked, reduced suite of call tests per problem, from its reference.

    Example: [bold]assay tests generate tasks.jsonl --out suite.jsonl --seed 1 --workers 2[/]
    then [bold]assay eval suite.jsonl --format assay --samples s.jsonl --out r.jsonl[/].
    Stdin problems: [bold]assay tests generate packages/ --format kattis --out suite.jsonl[/].
    """
    from ..runner import Runner

    try:
        tasks = read_tasks(problems, fmt)
    except AssayError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    options = Options(
        seed=seed,
        max_tests=max_tests,
        cover_k=cover_k,
        fill=not no_fill,
        min_mutation_score=min_mutation_score,
    )
    started = time.monotonic()
    try:
        with (
            Runner() as runner,
            Progress(
                TextColumn("generating"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err_console,
            ) as progress,
        ):
            bar = progress.add_task("generating", total=len(tasks))
            made, failed = generate_all(
                runner, tasks, options, workers, on_done=lambda *_: progress.advance(bar)
            )
    except AssayError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_SANDBOX) from exc
    with open(out, "w", encoding="utf-8") as fh:
        for p in made:
            fh.write(assay_suite.dumps(p) + "\n")
    for task_id, why in failed.items():
        err_console.print(f"[yellow]no suite for {task_id}:[/] {why}")
    s = report.summary(made)
    console.print(
        f"{len(made)} suites ({s['tests_total']} tests, median {s['tests_per_task_median']}) "
        f"written to {out} in {time.monotonic() - started:.1f} s; mutation score median "
        f"{s['mutation_score_median']}, fit for training {s['fit_for_training']}/{len(made)}"
    )


@tests_app.command("report")
def report_cmd(
    suite: Annotated[Path, typer.Argument(help="A suite written by 'assay tests generate'.")],
    min_mutation_score: Annotated[
        float | None,
        typer.Option(
            "--min-mutation-score", min=0.0, max=1.0, help="Re-apply the gate at this score."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per problem, then the summary.")
    ] = False,
) -> None:
    """Show each problem's quality report and the suite's summary.

    Example: [bold]assay tests report suite.jsonl --min-mutation-score 0.9[/]
    """
    try:
        problems = assay_suite.load(read_records(suite))
    except AssayError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    if min_mutation_score is not None:
        problems = [with_gate(p, min_mutation_score) for p in problems]
    if as_json:
        for p in problems:
            sys.stdout.write(json.dumps({"id": p.id, **report.quality(p)}) + "\n")
        sys.stdout.write(json.dumps(report.summary(problems)) + "\n")
        return
    console.print(report.table(problems))
    console.print(report.summary(problems))
