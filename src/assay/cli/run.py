"""``assay run``: one program in the sandbox."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .. import defaults, languages
from ..errors import AssayError, ValidationError
from ..types import ExecResult, Limits, OutputEncoding
from ._common import (
    EXIT_OK,
    EXIT_SANDBOX,
    EXIT_USAGE,
    Insecure,
    app,
    console,
    err_console,
    make_runner,
)


@app.command()
def run(
    file: Annotated[
        Path, typer.Argument(help="Source file (or a binary with --language executable).")
    ],
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            "-l",
            help=f"{', '.join(languages.names())}, or an alias "
            f"({', '.join(sorted(languages.aliases()))}); default: from the file's extension.",
        ),
    ] = None,
    stdin: Annotated[
        Path | None, typer.Option("--stdin", help="File fed to the program's standard input.")
    ] = None,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="CPU seconds.")
    ] = defaults.TIME_S,
    memory_limit: Annotated[
        int, typer.Option("--memory-limit", help="MiB, swap included.")
    ] = defaults.MEMORY_MB,
    output_limit: Annotated[
        int, typer.Option("--output-limit", help="Bytes of stdout (and of stderr).")
    ] = defaults.OUTPUT_BYTES,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object with the ExecResult fields.")
    ] = False,
    output_encoding: Annotated[
        OutputEncoding,
        typer.Option(
            "--output-encoding",
            help="With --json: utf-8 (lossy, readable) or base64 (the exact bytes).",
        ),
    ] = "utf-8",
    insecure: Insecure = False,
    image: Annotated[
        str | None,
        typer.Option("--image", help="Task image (id or name, `assay image list`) as the root."),
    ] = None,
) -> None:
    """Run one program in the sandbox and print what it did.

    Example: [bold]assay run solution.py --stdin input.txt --time-limit 1 --json[/]
    (add [bold]--image py39[/] to run it on a task image instead of the host's root)
    """
    try:
        code = file.read_bytes()
        data = stdin.read_bytes() if stdin is not None else b""
    except OSError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    lang_name = language
    if lang_name is None:
        guessed = languages.for_path(str(file))
        if guessed is None:
            err_console.print(f"[red]error:[/] cannot tell the language of {file}; pass --language")
            raise typer.Exit(EXIT_USAGE)
        lang_name = guessed.name
    try:
        languages.get(lang_name)
        limits = Limits(time_s=time_limit, memory_mb=memory_limit, output_bytes=output_limit)
    except ValidationError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    runner = make_runner(insecure)
    try:
        result = runner.run(code, lang_name, data, limits, image=image)
    except ValidationError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    except AssayError as exc:
        err_console.print(f"[red]sandbox error:[/] {exc}")
        raise typer.Exit(EXIT_SANDBOX) from exc
    finally:
        runner.close()
    if as_json:
        sys.stdout.write(json.dumps(result.to_json_dict(output_encoding)) + "\n")
    else:
        _print_result(result)
    raise typer.Exit(EXIT_SANDBOX if result.status == "sandbox_error" else EXIT_OK)


def _print_result(result: ExecResult) -> None:
    table = Table(show_header=False, box=None)
    colour = (
        "green"
        if result.status == "ok"
        else "yellow"
        if result.status != "sandbox_error"
        else "red"
    )
    table.add_row("status", f"[{colour}]{result.status}[/]")
    table.add_row(
        "exit code", str(result.exit_code) if result.signal is None else f"signal {result.signal}"
    )
    table.add_row("cpu", f"{result.cpu_s:.3f} s")
    table.add_row("wall", f"{result.wall_s:.3f} s")
    table.add_row("peak memory", f"{result.peak_memory_bytes / 2**20:.1f} MiB")
    console.print(table)
    for name, data, truncated in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        if data:
            note = " (truncated)" if truncated else ""
            console.rule(f"{name}{note}")
            console.print(data.decode(errors="replace")[:4000], markup=False, highlight=False)
