"""``assay tasks``: build agent tasks (repair tasks from samples, SWE-bench rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from ._common import EXIT_OK, console, err_console, make_runner, usage_error, usage_errors

tasks_app = typer.Typer(no_args_is_help=True, help="Build agent tasks (native JSONL format).")


@tasks_app.command("from-samples")
def from_samples_command(
    samples: Annotated[Path, typer.Argument(help="CodeT samples JSONL (one row per task).")],
    dataset: Annotated[Path, typer.Option("--dataset", help="HumanEval.jsonl(.gz).")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the tasks (JSONL).")],
    per_task: Annotated[int, typer.Option(help="Failing samples kept per HumanEval task.")] = 1,
    limit: Annotated[int | None, typer.Option(help="At most this many tasks in all.")] = None,
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Only these HumanEval task ids.")
    ] = None,
    plus: Annotated[
        Path | None,
        typer.Option("--plus", help="HumanEvalPlus.jsonl.gz: hide HumanEval+'s tests instead."),
    ] = None,
    insecure: Annotated[bool, typer.Option(help="Run without mandatory controls.")] = False,
) -> None:
    """Repair tasks from failing model samples: solution.py is a sample HumanEval's tests
    reject (judged in the sandbox), the tests are hidden, the canonical diff is the reference.

    Example: [bold]assay tasks from-samples ../shared/corpora/codet/humaneval-codegen16b-100-samples.jsonl
    --dataset ../shared/corpora/humaneval/HumanEval.jsonl.gz --out repair.jsonl --limit 50
    [--plus ../shared/corpora/humanevalplus/HumanEvalPlus.jsonl.gz][/]
    """
    from ..tasks import dump_tasks
    from ..tasks.codet import from_samples

    for arg, path in (("SAMPLES", samples), ("--dataset", dataset), ("--plus", plus)):
        if path is not None and not path.is_file():
            usage_error(arg, f"{path} is not a file")
    if not out.parent.is_dir():
        usage_error("--out", f"directory {out.parent} does not exist")
    if per_task < 1:
        usage_error("--per-task", "must be at least 1")
    if limit is not None and limit < 1:
        usage_error("--limit", "must be at least 1")
    with (
        make_runner(insecure) as runner,
        Progress(
            TextColumn("judging samples"), BarColumn(), MofNCompleteColumn(), console=err_console
        ) as bar,
    ):
        job = bar.add_task("judge", total=None)
        with usage_errors():
            made = dump_tasks(
                from_samples(
                    samples,
                    dataset,
                    runner,
                    tasks=set(task) if task else None,
                    per_task=per_task,
                    limit=limit,
                    plus_path=plus,
                    progress=lambda n: bar.advance(job, n),
                ),
                out,
            )
    console.print(f"{made} repair tasks written to {out}")
    raise typer.Exit(EXIT_OK)


@tasks_app.command("from-swebench")
def from_swebench_command(
    rows: Annotated[Path, typer.Argument(help="SWE-bench-style rows (JSONL or a JSON list).")],
    mirrors: Annotated[Path, typer.Option("--mirrors", help="Folder of local repo mirrors.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the tasks (JSONL).")],
    time_s: Annotated[
        float | None, typer.Option("--time-s", help="CPU seconds of one verification.")
    ] = None,
    memory_mb: Annotated[
        int | None, typer.Option("--memory-mb", help="Memory (MiB) of one verification.")
    ] = None,
    disk_mb: Annotated[
        int | None,
        typer.Option("--disk-mb", help="Disk (MiB) the tests may write, beyond the workspace."),
    ] = None,
) -> None:
    """SWE-bench-style rows as native tasks, read from local mirrors (nothing is fetched).

    Example: [bold]assay tasks from-swebench instances.jsonl --mirrors ~/mirrors --out t.jsonl
    --time-s 120 --memory-mb 4096[/]
    """
    from ..tasks import dump_tasks
    from ..tasks.swebench import from_row, load_rows
    from ..tasks.types import task_limits

    if not rows.is_file():
        usage_error("ROWS", f"{rows} is not a file")
    if not mirrors.is_dir():
        usage_error("--mirrors", f"{mirrors} is not a directory")
    with usage_errors():
        limits = task_limits(time_s, memory_mb, disk_mb)
        made = dump_tasks((from_row(r, mirrors, limits) for r in load_rows(rows)), out)
    console.print(f"{made} tasks written to {out}")
