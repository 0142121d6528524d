"""The agent-adapter examples run as they are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from serve_helpers import served

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_gym_example() -> None:
    out = _run("agent_gym_episode.py")
    assert "reward +1.00" in out and "'paid': True" in out


def test_verl_example() -> None:
    out = _run("verl_agent_tool.py")
    assert "step reward +1.00" in out and "final reward: 1.0" in out


@pytest.mark.slow
def test_verl_dataset_example_against_a_live_server(tmp_path: Path) -> None:
    with served("--slots", "2", "--records", "off") as (url, _pid):
        out = subprocess.run(
            [
                sys.executable,
                str(EXAMPLES / "verl_agent_dataset.py"),
                "--url",
                url,
                "--out",
                str(tmp_path / "rows.parquet"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "wrote 2 rows" in out.stdout
    assert out.stdout.count("final reward 1.0") == 2, out.stdout


def test_skyrl_example() -> None:
    pytest.importorskip("skyrl_gym", reason="pip install 'assay[agents]'")
    out = _run("skyrl_agent_env.py")
    assert "reward +1.00 done True" in out
