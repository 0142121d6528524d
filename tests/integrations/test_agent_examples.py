"""The agent-adapter examples run as they are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


def test_skyrl_example() -> None:
    pytest.importorskip("skyrl_gym", reason="pip install 'assay[agents]'")
    out = _run("skyrl_agent_env.py")
    assert "reward +1.00 done True" in out
