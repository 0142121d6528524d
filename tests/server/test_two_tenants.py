"""Acceptance of issue 26: two tenants on one real ``assay serve``. Tenant a runs hostile
sessions (sleepers, fork bombs, huge downloads, floods of creates and forks); tenant b's
batch of plain runs comes back with the same verdicts as alone, and the service answered
the attacker with results or 429s, never a fault of its own. The time ratio is a
performance claim: ``benchmarks/tenants_load.py`` prints it (README)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

# alone: its attacker (fork bombs, a flood of creates) loads the whole machine on purpose.
pytestmark = [pytest.mark.slow, pytest.mark.alone]
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "tenants_load.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tenants_load", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_hostile_tenant_does_not_change_another_tenants_verdicts() -> None:
    figures = _bench().measure(runs=12, sleepers=6, settle_s=3.0)
    assert figures["verdicts_identical"], figures
    assert figures["verdicts_ok"] == 12, figures
    answered = figures["attack"]
    faults = {k: n for k, n in answered.items() if k.split()[-1].startswith("5")}
    assert faults == {}, answered
    assert answered.get("create 200", 0) > 0, answered  # the attack did get sessions
