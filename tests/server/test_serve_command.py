"""``assay serve``'s options (issue 14): ``--slots`` sets sandbox slots; ``--workers`` is a
deprecated alias that says so; the service guide's default matches the code."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.server import cli as server_cli

GUIDE = Path(__file__).resolve().parents[2] / "docs/guides/service.md"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(server_cli, "serve", lambda *a, **k: calls.append(a))
    return calls


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["serve", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})


def test_slots_sets_sandbox_slots(served: list[tuple[Any, ...]]) -> None:
    result = invoke("--slots", "3")
    assert result.exit_code == 0, result.output
    assert served == [("127.0.0.1", 8080, 3, False)]
    assert "deprecated" not in result.output


def test_workers_is_a_deprecated_alias(served: list[tuple[Any, ...]]) -> None:
    result = invoke("--workers", "5")
    assert result.exit_code == 0, result.output
    assert served == [("127.0.0.1", 8080, 5, False)]
    assert "--workers is deprecated" in result.output and "--slots" in result.output


def test_bad_slots_name_the_option(served: list[tuple[Any, ...]]) -> None:
    for flag in ("--slots", "--workers"):
        result = invoke(flag, "0")
        assert result.exit_code == 2 and flag in result.output
    assert served == []


def test_auto_is_two_per_cpu_as_the_guide_says() -> None:
    cpus = len(os.sched_getaffinity(0))
    assert server_cli.slot_count("auto") == 2 * cpus
    text = GUIDE.read_text()
    assert re.search(r"assay serve .*--slots auto = 2 per CPU", text)
    assert "cores + 1" not in text and "serve --workers" not in text
    help_text = invoke("--help").output
    assert "--slots" in help_text and "2 per CPU" in help_text
