"""The ``assay`` command line.

Exit status: 0 when the sandbox did its job (whatever the program did), 2 for usage errors,
3 when the sandbox itself failed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from . import defaults, languages
from .errors import AssayError, InsecureHostError, ValidationError
from .sandbox import SandboxConfig, probe_host
from .sandbox._launch import build_native
from .types import ExecResult, Limits

EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Assay: run untrusted code in secure, fast sandboxes and judge it.",
    rich_markup_mode="rich",
)
console = Console()
err_console = Console(stderr=True)


def _register_records() -> None:
    from .telemetry.cli import records_app

    app.add_typer(
        records_app, name="records", help="Query, summarise and compact execution records."
    )


_register_records()


def _register_serve() -> None:
    from .server.cli import serve_command

    app.command("serve")(serve_command)


_register_serve()
app.add_typer(__import__("assay.testgen.cli", fromlist=["tests_app"]).tests_app, name="tests")


def _register_top() -> None:
    from .telemetry.top import top_command

    app.command("top")(top_command)


_register_top()


def _insecure_banner() -> None:
    err_console.print(
        "[bold white on red] INSECURE [/] mandatory isolation controls are missing on this host; "
        "programs run WITHOUT full isolation. Results are not safe to trust."
    )


def _runner(insecure: bool) -> Any:
    from .runner import Runner

    try:
        runner = Runner(config=SandboxConfig(insecure=insecure))
    except InsecureHostError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_SANDBOX) from exc
    if runner.insecure:
        _insecure_banner()
    return runner


@app.command()
def run(
    file: Annotated[
        Path, typer.Argument(help="Source file (or a binary with --language executable).")
    ],
    language: Annotated[
        str | None,
        typer.Option(
            "--language", "-l", help="python, c, cpp, executable (default: from extension)."
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
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Run even if mandatory isolation is missing.")
    ] = False,
) -> None:
    """Run one program in the sandbox and print what it did.

    Example: [bold]assay run solution.py --stdin input.txt --time-limit 1 --json[/]
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
    runner = _runner(insecure)
    try:
        result = runner.run(code, lang_name, data, limits)
    except AssayError as exc:
        err_console.print(f"[red]sandbox error:[/] {exc}")
        raise typer.Exit(EXIT_SANDBOX) from exc
    finally:
        runner.close()
    if as_json:
        sys.stdout.write(json.dumps(result.to_json_dict()) + "\n")
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


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report.")] = False,
) -> None:
    """Report which isolation controls this host offers and which Assay will use.

    Example: [bold]assay doctor[/]
    """
    cfg = SandboxConfig()
    report = probe_host(cfg)
    missing = report.missing_mandatory()
    langs = _language_versions()
    native = build_native() if cfg.launcher else None
    fast_start = {
        "launcher": native.launcher if native else None,
        "library": native.library if native else None,
    }
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    **report.to_dict(),
                    "missing_mandatory": missing,
                    "languages": langs,
                    "fast_start": fast_start,
                }
            )
            + "\n"
        )
        raise typer.Exit(EXIT_OK if not missing else EXIT_SANDBOX)
    table = Table(title="Assay sandbox controls on this host")
    table.add_column("control")
    table.add_column("available")
    table.add_column("mandatory")

    def row(name: str, ok: bool, mandatory: bool, detail: str = "") -> None:
        mark = "[green]yes[/]" if ok else ("[red]NO[/]" if mandatory else "[yellow]no[/]")
        table.add_row(name + (f" ({detail})" if detail else ""), mark, "yes" if mandatory else "")

    row("running as root", report.root, False)
    row("user namespaces", report.userns, not report.root)
    for name, ok in report.namespaces.items():
        row(f"{name} namespace", ok, True)
    for name, ok in report.cgroup_controllers.items():
        row(f"cgroup {report.cgroup_version} {name}", ok, name in ("memory", "pids"))
    row("per-run CPU weight", bool(report.cpu_weights), False, report.cpu_weights or "off")
    row("sandbox user ids", report.sandbox_ids_ok, True, report.sandbox_ids)
    row("seccomp", report.seccomp, True, report.seccomp_detail)
    row("Landlock", report.landlock_abi > 0, False, f"ABI {report.landlock_abi}")
    row("sandbox interpreter", report.python_ok, True, report.python)
    for label, path in (
        ("C launcher (executables start fast)", fast_start["launcher"]),
        ("C set-up library (Python programs start fast)", fast_start["library"]),
    ):
        row(label, path is not None, False, path or "no C compiler: the Python fallback is used")
    console.print(table)
    lang_table = Table(title="Languages")
    lang_table.add_column("language")
    lang_table.add_column("installed")
    lang_table.add_column("toolchain")
    for name, version in langs.items():
        ok = "missing" not in version
        lang_table.add_row(name, "[green]yes[/]" if ok else "[yellow]no[/]", version)
    console.print(lang_table)
    for note in report.notes:
        console.print(f"note: {note}")
    if missing:
        console.print(
            f"[red]Missing mandatory controls:[/] {', '.join(missing)}. Running code is refused unless --insecure."
        )
        raise typer.Exit(EXIT_SANDBOX)
    console.print(
        "[green]All mandatory controls are available; every sandbox uses all of the above.[/]"
    )


def _language_versions() -> dict[str, str]:
    out = {}
    for name in languages.names():
        try:
            out[name] = languages.get(name).toolchain()
        except Exception as exc:
            out[name] = f"missing ({exc})"
    return out


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
            "prime, kodcode, acecoder, kattis, humaneval-x, multipl-e.",
        ),
    ],
    samples: Annotated[
        Path, typer.Option("--samples", help='JSONL rows {"task_id", "completion"|"solution"}.')
    ],
    out: Annotated[Path, typer.Option("--out", help="Where to write one JSON row per sample.")],
    tests: Annotated[str, typer.Option("--tests", help="EvalPlus inputs: base or plus.")] = "plus",
    workers: Annotated[
        int, typer.Option("--workers", help="Sandbox slots judging at once (default: CPU cores).")
    ] = len(os.sched_getaffinity(0)),
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            "-l",
            help="For multilingual datasets: humaneval-x checks it, multipl-e picks its rows.",
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
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Run even if mandatory isolation is missing.")
    ] = False,
) -> None:
    """Judge a file of samples against a dataset; writes a row per sample and prints a summary.

    Example: [bold]assay eval ../shared/corpora/humaneval/HumanEval.jsonl.gz --format humaneval
    --samples samples.jsonl --out results.jsonl[/]
    """
    from ._progress import judging_progress
    from .evaluate import evaluate, summarize
    from .formats import FORMATS

    if fmt not in FORMATS:
        err_console.print(f"[red]error:[/] --format: unknown format {fmt!r}")
        raise typer.Exit(EXIT_USAGE)
    if workers < 1:
        err_console.print("[red]error:[/] --workers: must be at least 1")
        raise typer.Exit(EXIT_USAGE)
    limit: float | str = time_limit
    if time_limit not in ("derive", "format"):
        try:
            limit = float(time_limit)
        except ValueError:
            limit = -1.0
        if not 0 < limit <= 3600:
            err_console.print(
                "[red]error:[/] --time-limit: 'derive', 'format' or seconds in (0, 3600]"
            )
            raise typer.Exit(EXIT_USAGE)
    runner = _runner(insecure)
    try:
        with judging_progress(err_console) as (on_start, on_row):
            rows = evaluate(
                dataset,
                fmt,
                samples,
                out,
                tests=tests,
                workers=workers,
                runner=runner,
                on_result=on_row,
                records=records,
                cache=cache,
                on_start=on_start,
                language=language,
                stop_on_failure=stop_on_failure,
                time_limit=limit,
            )
    except ValidationError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    finally:
        runner.close()
    not_judged = sorted({(r["task_id"], r["reason"]) for r in rows if not r["judged"]})
    for task, reason in not_judged:
        err_console.print(f"[yellow]warning:[/] {task}: {reason}")
    summary = summarize(rows)
    table = Table(title=f"{fmt}: {summary['samples']} samples, {summary['tasks']} tasks")
    table.add_column("measure")
    table.add_column("value")
    table.add_row("accepted", f"{summary['accepted']} / {summary['samples']}")
    for verdict, count in summary["verdicts"].items():
        table.add_row(f"  {verdict}", str(count))
    for key in ("pass@1", "pass@10", "pass@100"):
        if key in summary:
            table.add_row(key, f"{summary[key]:.4f}")
    console.print(table)


@app.command()
def demo(
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Run even if mandatory isolation is missing.")
    ] = False,
) -> None:
    """Run bundled sample programs (correct, failing and hostile) and print a table.

    Example: [bold]assay demo[/]
    """
    from .demo import run_demo, run_eval_demo

    runner = _runner(insecure)
    try:
        run_demo(runner, console)
        run_eval_demo(runner, console)
    finally:
        runner.close()


def main() -> None:
    try:
        app()
    except ValidationError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
