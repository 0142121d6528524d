"""``assay top``: a live terminal view of a running service, from its ``/metrics`` endpoint.

It needs nothing but the service's URL (no Prometheus): two scrapes a few seconds apart give
rates (throughput, verdicts, errors) the way ``rate()`` does, and the run-time histogram's
buckets give percentiles the way ``histogram_quantile()`` does.
"""

from __future__ import annotations

import os
import time
from typing import Annotated

import httpx
import typer
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .history import Snapshot, delta, quantile, snapshot

__all__ = ["fetch", "render", "top_command"]


def fetch(client: httpx.Client, url: str) -> Snapshot:
    """Scrape ``url``/metrics once into a :class:`Snapshot` (raises ``httpx.HTTPError``)."""
    response = client.get(f"{url.rstrip('/')}/metrics")
    response.raise_for_status()
    return snapshot(text_string_to_metric_families(response.text), time.time())


def _fmt(value: float | None, unit: str = "", digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}{unit}"


def render(url: str, prev: Snapshot, cur: Snapshot) -> Group:
    """One frame: what happened between two scrapes, and the gauges now."""
    dt = max(cur.t - prev.t, 1e-6)
    done = sum(cur.completed.values()) - sum(prev.completed.values())
    g = cur.gauges

    def rate(name: str) -> float:
        return max(0.0, cur.counters.get(name, 0.0) - prev.counters.get(name, 0.0)) / dt

    run = delta(prev.run_buckets, cur.run_buckets)
    wait = delta(prev.wait_buckets, cur.wait_buckets)
    head = Table.grid(padding=(0, 3))
    head.add_row(
        Text(f"assay top  {url}", style="bold"),
        Text(time.strftime("%H:%M:%S"), style="dim"),
    )
    overview = Table(title=f"last {dt:.1f} s", show_header=False, title_justify="left")
    overview.add_column(style="bold")
    overview.add_column(justify="right")
    busy, workers = g.get("assay_workers_busy"), g.get("assay_workers")
    rows = [
        ("throughput", f"{done / dt:.2f} jobs/s"),
        ("jobs finished (total)", f"{sum(cur.completed.values()):.0f}"),
        (
            "run time p50 / p95",
            f"{_fmt(quantile(0.5, run), ' s')} / {_fmt(quantile(0.95, run), ' s')}",
        ),
        ("queue wait p95", _fmt(quantile(0.95, wait), " s")),
        ("queue depth", _fmt(g.get("assay_queue_depth"), "", 6)),
        ("oldest queued job", _fmt(g.get("assay_queue_oldest_age_seconds"), " s")),
        ("workers busy", f"{_fmt(busy, '', 6)} / {_fmt(workers, '', 6)}"),
        ("sandbox errors", f"{rate('assay_sandbox_errors_total'):.2f}/s"),
        ("rejected (queue full)", f"{rate('assay_jobs_rejected_total'):.2f}/s"),
    ]
    if "assay_records_spooled" in g:
        rows.append(("records spooled", _fmt(g["assay_records_spooled"], "", 9)))
        rows.append(("record upload errors", f"{rate('assay_records_upload_errors_total'):.2f}/s"))
    if "assay_sessions_open" in g:
        open_, cap = g["assay_sessions_open"], g.get("assay_sessions_max")
        rows += [
            ("sessions open / cap", f"{_fmt(open_, '', 6)} / {_fmt(cap, '', 6)}"),
            ("sessions busy", _fmt(g.get("assay_sessions_busy"), "", 6)),
            ("oldest session", _fmt(g.get("assay_sessions_oldest_age_seconds"), " s")),
            ("session steps", f"{rate('assay_session_steps_total'):.2f}/s"),
            ("sessions refused", f"{rate('assay_sessions_rejected_total'):.2f}/s"),
            ("sessions past TTL", _fmt(g.get("assay_sessions_past_ttl"), "", 6)),
        ]
    for name, value in rows:
        alarming = name.startswith(("sandbox", "rejected", "sessions refused"))
        style = "red" if alarming and not value.startswith("0.00") else ""
        if name == "sessions past TTL" and value not in ("0", "-"):
            style = "red"
        overview.add_row(name, Text(value, style=style))
    mix = Table(title="verdict mix", title_justify="left")
    mix.add_column("verdict")
    mix.add_column("last interval", justify="right")
    mix.add_column("total", justify="right")
    mix.add_column("share", justify="right")
    total = sum(cur.completed.values()) or 1.0
    for verdict, count in sorted(cur.completed.items(), key=lambda kv: -kv[1]):
        recent = count - prev.completed.get(verdict, 0.0)
        mix.add_row(verdict, f"{recent / dt:.2f}/s", f"{count:.0f}", f"{count / total:.1%}")
    parts = [head, overview, mix]
    if cur.nodes:
        parts.append(_nodes(cur))
    return Group(*parts)


def _nodes(cur: Snapshot) -> Table:
    """Capacity per node (one row locally; one per node on a cluster executor)."""
    table = Table(title="nodes", title_justify="left")
    for col in ("node", "up", "slots busy", "memory reserved"):
        table.add_column(col, justify="left" if col == "node" else "right")
    for node, g in sorted(cur.nodes.items()):
        up = g.get("assay_node_up", 0.0) > 0
        budget = g.get("assay_node_memory_budget_bytes", 0.0)
        used = g.get("assay_node_memory_reserved_bytes", 0.0)
        table.add_row(
            node,
            Text("up" if up else "DOWN", style="" if up else "red"),
            f"{_fmt(g.get('assay_node_slots_busy'), '', 6)} / {_fmt(g.get('assay_node_slots'), '', 6)}",
            f"{used / 2**30:.1f} / {budget / 2**30:.1f} GiB",
        )
    return table


def top_command(
    url: Annotated[
        str, typer.Argument(help="Base URL of a running `assay serve`.")
    ] = "http://127.0.0.1:8080",
    interval: Annotated[float, typer.Option(min=0.2, help="Seconds between two scrapes.")] = 2.0,
    once: Annotated[
        bool, typer.Option("--once", help="Print one frame (two scrapes) and exit.")
    ] = False,
) -> None:
    """Live view of a running service: throughput, queue, verdict mix, errors, sessions, nodes.

    Reads the service's /metrics (sends $ASSAY_API_TOKEN as a bearer token if set). Quit with
    Ctrl-C.

    Example: [bold]assay top http://127.0.0.1:8080 --interval 1[/]
    """
    token = os.environ.get("ASSAY_API_TOKEN")
    headers = {"authorization": f"Bearer {token}"} if token else {}
    console = Console()
    with httpx.Client(timeout=10, headers=headers) as client:
        try:
            prev = fetch(client, url)
            if once:
                time.sleep(interval)
                console.print(render(url, prev, fetch(client, url)))
                return
            with Live(console=console, auto_refresh=False, screen=False) as live:
                while True:
                    time.sleep(interval)
                    cur = fetch(client, url)
                    live.update(render(url, prev, cur), refresh=True)
                    prev = cur
        except httpx.HTTPError as exc:
            console.print(f"[red]error:[/] cannot read {url}/metrics: {exc}")
            raise typer.Exit(1) from exc
        except KeyboardInterrupt:
            return
