"""``assay records …``: look at execution records without writing code.

A Typer sub-app; the main CLI registers :data:`records_app` as ``assay records``. Exit status
follows the main CLI: 0 on success, 2 for usage errors (a bad option names itself).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.compute as pc
import typer
from rich import box
from rich.console import Console
from rich.table import Table

from ._store import check
from .compact import compact as _compact
from .compact import query

__all__ = ["records_app"]

EXIT_USAGE = 2

records_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Inspect, summarise and compact execution records.",
)

TargetArg = Annotated[
    str | None,
    typer.Argument(
        metavar="TARGET",
        help="Records directory or fsspec URL (default: $ASSAY_RECORDS, "
        "else ~/.local/share/assay/records).",
        show_default=False,
    ),
]


def _target(target: str | None) -> str | Path | None:
    """Validate the target before any work, so a typo is a usage error, not an empty table
    (an unknown URL scheme or missing S3 credentials: one line, exit 2, from ``assay``)."""
    loc = check(target, "TARGET")
    if loc.kind == "off":
        raise typer.BadParameter(
            "records are 'off'; name a directory or URL", param_hint="'TARGET'"
        )
    if loc.path is not None and not loc.path.is_dir():
        raise typer.BadParameter(f"no records directory at {loc.path}", param_hint="'TARGET'")
    return loc.path if loc.path is not None else loc.url


def _moment(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(
            f"{value!r} is not an ISO date or time (e.g. 2024-05-01 or 2024-05-01T13:00)",
            param_hint=f"'{option}'",
        ) from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _iso(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


@records_app.command()
def show(
    target: TargetArg = None,
    verdict: Annotated[str | None, typer.Option("--verdict", help="Only this verdict.")] = None,
    language: Annotated[str | None, typer.Option("--language", help="Only this language.")] = None,
    problem: Annotated[str | None, typer.Option("--problem", help="Only this problem id.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Ended at or after (ISO, UTC if no zone).")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Ended before (ISO, UTC if no zone).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Newest N records.")] = 50,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per line, every field.")
    ] = False,
) -> None:
    """Show the newest records, optionally filtered.

    Example: [bold]assay records show --verdict accepted --limit 20[/]
    """
    where = _target(target)
    table = query(
        where,
        verdict=verdict,
        language=language,
        problem_id=problem,
        since=_moment(since, "--since"),
        until=_moment(until, "--until"),
        limit=limit,
    )
    if as_json:
        for row in table.to_pylist():
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    console = Console()
    if table.num_rows == 0:
        console.print(f"no records match in {where}")
        return
    rows = table.to_pylist()
    out = _narrow_table(rows) if console.width < 110 else _wide_table(rows)
    console.print(out)


def _cells(row: dict[str, Any]) -> dict[str, str]:
    peak = row["peak_memory_bytes"]
    return {
        "job": str(row["job_id"]),
        "ended": _iso(row["ended_at"]),
        "problem": row["problem_id"] or "-",
        "language": row["language"] or "-",
        "verdict": row["verdict"] or f"({row['outcome']})",
        "reward": _num(row["reward"], ".3g"),
        "cpu": _num(row["cpu_s"], ".3f"),
        "peak": _num(None if peak is None else peak / 2**20, ".1f"),
        "queue": _num(row["queue_wait_s"], ".3f"),
    }


def _wide_table(rows: list[dict[str, Any]]) -> Table:
    out = Table(title=f"{len(rows)} newest records")
    for name in ("job", "ended (UTC)", "problem", "language", "verdict"):
        out.add_column(name, overflow="fold")
    for name in ("reward", "cpu s", "peak MiB", "queue s"):
        out.add_column(name, justify="right")
    for row in rows:
        c = _cells(row)
        out.add_row(
            *(c[k] for k in ("job", "ended", "problem", "language", "verdict")),
            *(c[k] for k in ("reward", "cpu", "peak", "queue")),
        )
    return out


def _narrow_table(rows: list[dict[str, Any]]) -> Table:
    """Two lines per record, so that 80 columns show every field whole (a one-line row
    needs about 100)."""
    out = Table(
        title=f"{len(rows)} newest records",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    out.add_column("job\nended (UTC)", overflow="fold")
    out.add_column("problem\nlanguage", overflow="fold")
    out.add_column("verdict", overflow="fold")
    for name in ("reward", "cpu s", "MiB", "queue s"):
        out.add_column(name, justify="right")
    for row in rows:
        c = _cells(row)
        out.add_row(
            f"{c['job']}\n{c['ended']}",
            f"{c['problem']}\n{c['language']}",
            c["verdict"],
            c["reward"],
            c["cpu"],
            c["peak"],
            c["queue"],
        )
    return out


@records_app.command()
def compact(
    target: TargetArg = None,
    before: Annotated[
        str | None,
        typer.Option("--before", help="Only segments opened before this UTC date (YYYY-MM-DD)."),
    ] = None,
) -> None:
    """Move closed JSONL segments into date-partitioned Parquet; print the files written.

    Segments a running writer still appends to are left alone, so this is safe beside a live
    executor.

    Example: [bold]assay records compact s3://bucket/assay --before 2024-05-01[/]
    """
    where = _target(target)
    day: date | None = None
    if before is not None:
        try:
            day = date.fromisoformat(before)
        except ValueError as exc:
            raise typer.BadParameter(
                f"{before!r} is not a date (YYYY-MM-DD)", param_hint="'--before'"
            ) from exc
    written = _compact(where, before=day)
    console = Console()
    for path in written:
        console.print(path, highlight=False, soft_wrap=True)
    console.print(f"wrote {len(written)} Parquet file(s) under {where}")


@records_app.command()
def stats(
    target: TargetArg = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Ended at or after (ISO, UTC if no zone).")
    ] = None,
) -> None:
    """Count records by verdict and language; queue wait and run time mean, p50 and p95.

    Example: [bold]assay records stats --since 2024-05-01[/]
    """
    table = query(_target(target), since=_moment(since, "--since"))
    console = Console()
    if table.num_rows == 0:
        console.print("no records")
        return
    by_verdict = _counts(table, ["verdict", "outcome"], lambda v, o: v or f"({o or '-'})")
    by_language = _counts(table, ["language"], lambda lang: lang or "-")
    for title, counts in (("verdict", by_verdict), ("language", by_language)):
        out = Table(title=f"by {title}")
        out.add_column(title)
        out.add_column("records", justify="right")
        out.add_column("share", justify="right")
        for value, count in counts:
            out.add_row(value, str(count), f"{count / table.num_rows:.1%}")
        console.print(out)
    # Every job waited; only jobs that ran have a run time (a deadline miss would count as 0).
    ran = table.filter(pc.field("outcome") == "done")
    out = Table(title="timings (seconds)")
    for name in ("", "records", "mean", "p50", "p95"):
        out.add_column(name, justify="right" if name else "left")
    for label, rows, column in (
        ("queue wait", table, "queue_wait_s"),
        ("run (wall)", ran, "wall_s"),
        ("run (cpu)", ran, "cpu_s"),
    ):
        values = _summary(rows[column])
        out.add_row(label, str(rows.num_rows), *(_num(v, ".4f") for v in values))
    console.print(out)


def _counts(table: pa.Table, keys: list[str], label: Callable[..., str]) -> list[tuple[str, int]]:
    """Row counts per distinct ``label(*keys)``, most frequent first (grouped in Arrow)."""
    groups = table.group_by(keys, use_threads=False).aggregate([([], "count_all")])
    totals: dict[str, int] = {}
    for row in groups.to_pylist():
        name = label(*(row[k] for k in keys))
        totals[name] = totals.get(name, 0) + int(row["count_all"])
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))


def _summary(column: pa.ChunkedArray[Any]) -> tuple[float | None, float | None, float | None]:
    mean = pc.mean(column).as_py()
    p50 = pc.quantile(column, q=0.5).to_pylist()
    p95 = pc.quantile(column, q=0.95).to_pylist()
    return mean, p50[0] if p50 else None, p95[0] if p95 else None
