"""The alert rules in deploy/prometheus: promtool's checks and unit tests, and their contract.

promtool comes with Debian's ``prometheus`` package (``make apt`` installs it, best effort).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.telemetry import metric_names

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "assay-rules.yml"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not found: install Debian's 'prometheus' package (make apt)")
    return path


def alerts() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_accepts_the_rules() -> None:
    out = subprocess.run(
        [promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_unit_tests_pass() -> None:
    out = subprocess.run(
        [promtool(), "test", "rules", "assay-rules.test.yml"],
        cwd=RULES_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_alert_has_a_runbook_a_severity_and_a_unit_test() -> None:
    tested = (RULES_DIR / "assay-rules.test.yml").read_text()
    names = [rule["alert"] for rule in alerts()]
    assert len(names) == len(set(names))
    for rule in alerts():
        assert rule["labels"]["severity"] in {"page", "ticket"}, rule["alert"]
        assert len(rule["annotations"]["runbook"]) > 40, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert f"alertname: {rule['alert']}" in tested, f"{rule['alert']} has no promtool test"


def test_rules_use_only_metrics_assay_exports() -> None:
    exported = {name for name, _, _ in metric_names()}
    doc = RULES.read_text()
    for used in set(re.findall(r"\bassay_[a-z_]+\b", doc)):
        base = re.sub(r"_(bucket|sum|count)$", "", used)
        assert used in exported or base in exported, f"{used} is not an Assay metric"
