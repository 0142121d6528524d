"""The example scripts run as they are (they create their own embedded executor)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("script", ["verl_compute_score.py", "trl_grpo_reward.py"])
def test_example_runs(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    if script == "verl_compute_score.py":
        assert "scores: [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]" in done.stdout
        assert "same keys on every row: True" in done.stdout
    else:
        assert "assay_binary [1.0, 0.0, 1.0, None]" in done.stdout
