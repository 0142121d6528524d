"""The Grafana dashboard in deploy/grafana: well-formed, and only over metrics Assay exports.

Its PromQL is also run against a real Prometheus in ``test_alerting.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from assay.telemetry import metric_names

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "assay-dashboard.json"


def expressions() -> list[str]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def grafana_to_promql(expr: str) -> str:
    """A panel query as Prometheus itself would run it (Grafana's variables filled in)."""
    return expr.replace("$__rate_interval", "1m").replace("$instance", ".*")


def test_dashboard_panels_query_only_assay_metrics() -> None:
    doc = json.loads(DASHBOARD.read_text())
    assert doc["uid"] == "assay-overview" and doc["panels"]
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    exported = {name for name, _, _ in metric_names()}
    for panel in doc["panels"]:
        assert panel["targets"], panel["title"]
    for expr in expressions():
        for used in re.findall(r"\bassay_[a-z_]+\b", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", used)
            assert used in exported or base in exported, f"{used} is not an Assay metric"
