"""deploy/queue, checked offline as deploy/kuberay is: the worker Deployment, the KEDA
ScaledObject and the HPA fallback against the fields their APIs document (schemas written
from the Kubernetes apps/v1 and autoscaling/v2 references and KEDA's ScaledObject and
redis-streams scaler pages: no package here ships them), the security context (the KubeRay
worker's, exactly), the names the code uses, and the alert rules under promtool."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from assay.executor.queue import PRIORITIES
from assay.executor.queue._redis import GROUP
from assay.telemetry import metric_names

ROOT = Path(__file__).resolve().parents[2]
QUEUE = ROOT / "deploy" / "queue"

_NAMED = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}


def resource(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A Kubernetes object's schema: ``spec``'s own fields only (unknown ones are errors,
    so a misspelt field fails here instead of being dropped by the API server)."""
    spec = {"type": "object", "additionalProperties": False, **spec}
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": _NAMED,
            "spec": spec,
        },
    }


DEPLOYMENT_SCHEMA = resource(
    "apps/v1",
    "Deployment",
    {
        "required": ["selector", "template"],
        "properties": {
            "replicas": {"type": "integer", "minimum": 0},
            "selector": {"type": "object", "required": ["matchLabels"]},
            "template": {"type": "object", "required": ["metadata", "spec"]},
            "strategy": {"type": "object"},
            "minReadySeconds": {"type": "integer"},
            "revisionHistoryLimit": {"type": "integer"},
            "progressDeadlineSeconds": {"type": "integer"},
            "paused": {"type": "boolean"},
        },
    },
)
_TRIGGER = {
    "type": "object",
    "required": ["type", "metadata"],
    "additionalProperties": False,
    "properties": {
        "type": {"type": "string"},
        "name": {"type": "string"},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "authenticationRef": _NAMED,
        "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
        "useCachedMetrics": {"type": "boolean"},
    },
}
#: keda.sh/v1alpha1 ScaledObject (KEDA 2.x).
SCALEDOBJECT_SCHEMA = resource(
    "keda.sh/v1alpha1",
    "ScaledObject",
    {
        "required": ["scaleTargetRef", "triggers"],
        "properties": {
            "scaleTargetRef": _NAMED,
            "pollingInterval": {"type": "integer"},
            "cooldownPeriod": {"type": "integer"},
            "initialCooldownPeriod": {"type": "integer"},
            "idleReplicaCount": {"type": "integer"},
            "minReplicaCount": {"type": "integer"},
            "maxReplicaCount": {"type": "integer"},
            "fallback": {"type": "object"},
            "advanced": {"type": "object"},
            "triggers": {"type": "array", "minItems": 1, "items": _TRIGGER},
        },
    },
)
#: The redis-streams scaler's metadata (KEDA docs), all strings.
REDIS_STREAMS_KEYS = {
    "address", "host", "port", "addresses", "hosts", "ports", "stream", "consumerGroup",
    "pendingEntriesCount", "streamLength", "lagCount", "activationLagCount", "databaseIndex",
    "enableTLS", "unsafeSsl", "usernameFromEnv", "passwordFromEnv", "sentinelUsernameFromEnv",
    "sentinelPasswordFromEnv", "sentinelMaster", "sentinelMasterFromEnv",
}  # fmt: skip


def docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((QUEUE / name).read_text()) if d]


def worker_container() -> dict[str, Any]:
    (deployment,) = docs("worker.yaml")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def test_the_deployment_matches_apps_v1() -> None:
    (deployment,) = docs("worker.yaml")
    jsonschema.validate(deployment, DEPLOYMENT_SCHEMA)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_the_workers_have_the_kuberay_workers_security_context() -> None:
    ray = yaml.safe_load((ROOT / "deploy" / "kuberay" / "raycluster.yaml").read_text())
    (ray_worker,) = ray["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"]
    assert worker_container()["securityContext"] == ray_worker["securityContext"]


def test_the_worker_runs_a_real_assay_command_with_its_token_from_a_secret() -> None:
    from assay.cli import app

    c = worker_container()
    script = c["args"][0]
    assert script.startswith("assay-cgroup-setup && exec /opt/assay/bin/assay worker ")
    help_text = CliRunner().invoke(app, ["worker", "--help"], terminal_width=200).output
    for flag in (w for w in script.split() if w.startswith("--")):
        assert flag in help_text, flag
    assert "redis://" not in script  # the URL (and its token) come from the Secret
    (url,) = [e for e in c["env"] if e["name"] == "ASSAY_QUEUE_URL"]
    assert url["valueFrom"]["secretKeyRef"] == {"name": "assay-queue", "key": "url"}
    res = c["resources"]
    assert res["requests"] == res["limits"], "Guaranteed QoS for the sandbox"
    (port,) = c["ports"]
    assert f"--metrics-port {port['containerPort']}" in script


def test_keda_scales_the_workers_on_the_lag_of_every_priority_stream() -> None:
    auth, scaled = docs("keda-scaledobject.yaml")
    assert auth["kind"] == "TriggerAuthentication"
    jsonschema.validate(scaled, SCALEDOBJECT_SCHEMA)
    (deployment,) = docs("worker.yaml")
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    triggers = scaled["spec"]["triggers"]
    assert [t["metadata"]["stream"] for t in triggers] == [f"assay:jobs:{p}" for p in PRIORITIES]
    for t in triggers:
        assert t["type"] == "redis-streams"
        assert set(t["metadata"]) <= REDIS_STREAMS_KEYS, set(t["metadata"]) - REDIS_STREAMS_KEYS
        assert t["metadata"]["consumerGroup"] == GROUP
        assert int(t["metadata"]["lagCount"]) > 0
        assert t["authenticationRef"]["name"] == auth["metadata"]["name"]
    (secret,) = auth["spec"]["secretTargetRef"]
    assert secret["parameter"] == "password"


def test_the_hpa_fallback_targets_the_workers_on_an_exported_metric() -> None:
    (hpa,) = docs("hpa-fallback.yaml")
    assert (hpa["apiVersion"], hpa["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "assay-worker",
    }
    assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"] >= 1
    exported = {name for name, _, _ in metric_names()}
    external = [
        m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "External"
    ]
    assert external == ["assay_fleet_queue_lag"]
    assert set(external) <= exported


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not found: install Debian's 'prometheus' package (make apt)")
    return path


def test_promtool_accepts_the_fleet_rules_and_their_unit_tests_pass() -> None:
    check = subprocess.run(
        [promtool(), "check", "rules", "assay-fleet-rules.yml"],
        cwd=QUEUE, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    test = subprocess.run(
        [promtool(), "test", "rules", "assay-fleet-rules.test.yml"],
        cwd=QUEUE, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert test.returncode == 0, test.stdout + test.stderr


def test_the_fleet_alerts_use_exported_metrics_and_say_what_to_do() -> None:
    exported = {name for name, _, _ in metric_names()}
    text = (QUEUE / "assay-fleet-rules.yml").read_text()
    rules = [r for g in yaml.safe_load(text)["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} == {"AssayFleetLagGrowing", "AssayFleetWorkersDying"}
    for rule in rules:
        used = set(re.findall(r"assay_[a-z_]+", rule["expr"]))
        assert used and used <= exported, used - exported
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert len(rule["annotations"]["runbook"]) > 40
