"""``assay top`` against a live service's /metrics."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from server_helpers import fake_run, live, memory_executor

from assay.cli import app
from assay.server import create_app

ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}


def test_top_once_shows_throughput_queue_and_verdicts() -> None:
    ex = memory_executor(fake_run(), slots=2, cache=False)
    try:
        with live(create_app(ex)) as srv:
            with httpx.Client(base_url=srv.url, timeout=30) as client:
                for i in range(5):
                    r = client.post("/run_code", json={"code": f"x{i}", "language": "python"})
                    assert r.status_code == 200
            out = CliRunner().invoke(app, ["top", srv.url, "--once", "--interval", "0.2"], env=ENV)
    finally:
        ex.close()
    assert out.exit_code == 0, out.output
    assert "throughput" in out.output and "queue depth" in out.output
    assert "workers busy" in out.output and "sandbox errors" in out.output
    lines = [line for line in out.output.splitlines() if line.strip().startswith("│ ok")]
    assert lines and "5" in lines[0] and "100.0%" in lines[0]


def test_top_names_an_unreachable_service() -> None:
    out = CliRunner().invoke(app, ["top", "http://127.0.0.1:9", "--once"], env=ENV)
    assert out.exit_code == 1 and "cannot read http://127.0.0.1:9/metrics" in out.output


def test_top_help_has_an_example() -> None:
    out = CliRunner().invoke(app, ["top", "--help"], env=ENV)
    assert out.exit_code == 0 and "Example: assay top http://127.0.0.1:8080" in out.output


def test_top_shows_sessions_and_each_node() -> None:
    from rich.console import Console

    from assay.telemetry import Metrics, NodeCapacity, SessionStats
    from assay.telemetry.history import snapshot
    from assay.telemetry.top import render

    m = Metrics()
    steps = [0]
    m.bind_sessions(lambda: SessionStats(12, 3, 256, 12 << 29, 95.0, 1, 0, steps[0]))
    m.bind_nodes(
        lambda: [
            NodeCapacity("node-a", 16, 12, 32 << 30, 6 << 30),
            NodeCapacity("node-b", 16, 0, 32 << 30, 0, up=False),
        ]
    )
    prev = snapshot(m.registry.collect(), 100.0)
    steps[0] = 40
    m.session_rejected()
    cur = snapshot(m.registry.collect(), 102.0)
    console = Console(record=True, width=120, color_system=None)
    console.print(render("http://x", prev, cur))
    text = console.export_text()
    assert "sessions open / cap" in text and "12 / 256" in text
    assert "session steps" in text and "20.00/s" in text  # 40 steps in 2 s
    assert "sessions refused" in text and "0.50/s" in text
    assert "sessions past TTL" in text and "oldest session" in text and "95 s" in text
    rows = {line.split()[1]: line for line in text.splitlines() if "node-" in line}
    assert (
        "up" in rows["node-a"]
        and "12 / 16" in rows["node-a"]
        and "6.0 / 32.0 GiB" in rows["node-a"]
    )
    assert "DOWN" in rows["node-b"]
