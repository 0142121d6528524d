"""``assay agent demo`` (part of ``make demo``): every scripted agent earns what its script
should, on the real CodeT samples the demo picks (a task the converter made that could not
be verified gave the looper a sandbox_error, and ``make demo`` exited 2)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from assay import Runner
from assay.agents.demo import run_agent_demo

CORPORA = Path(os.environ.get("ASSAY_CORPORA", Path(__file__).parents[3] / "shared" / "corpora"))

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not (CORPORA / "codet").is_dir(), reason="needs ../shared/corpora/codet")
def test_the_agent_demo_has_no_surprises(runner: Runner) -> None:
    out = io.StringIO()
    surprises = run_agent_demo(runner, Console(file=out, width=120), CORPORA)
    assert surprises == 0, out.getvalue()[-3000:]
    assert "4 episodes; 0 unexpected." in out.getvalue()
