"""deploy/kuberay, checked offline: the RayCluster manifest against the fields KubeRay
documents for ``ray.io/v1`` (no package here ships the CRD's schema, so the schema below
is written from KubeRay's API reference: RayClusterSpec, HeadGroupSpec, WorkerGroupSpec,
AutoscalerOptions), the pod security settings the sandbox needs, and the image recipe."""

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

ROOT = Path(__file__).resolve().parents[2]
KUBERAY = ROOT / "deploy" / "kuberay"

_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_TEMPLATE = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["containers"],
            "properties": {"containers": {"type": "array", "minItems": 1}},
        },
    },
}
#: ray.io/v1 RayCluster, the fields KubeRay documents (unknown fields are errors here, so a
#: misspelt field fails the test instead of being dropped by the API server).
RAYCLUSTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayCluster"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "required": ["headGroupSpec"],
            "additionalProperties": False,
            "properties": {
                "rayVersion": {"type": "string"},
                "enableInTreeAutoscaling": {"type": "boolean"},
                "suspend": {"type": "boolean"},
                "managedBy": {"type": "string"},
                "headServiceAnnotations": _STR_MAP,
                "gcsFaultToleranceOptions": {"type": "object"},
                "autoscalerOptions": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "upscalingMode": {"enum": ["Default", "Aggressive", "Conservative"]},
                        "idleTimeoutSeconds": {"type": "integer", "minimum": 0},
                        "image": {"type": "string"},
                        "imagePullPolicy": {"type": "string"},
                        "resources": {"type": "object"},
                        "securityContext": {"type": "object"},
                        "env": {"type": "array"},
                        "envFrom": {"type": "array"},
                        "volumeMounts": {"type": "array"},
                        "version": {"type": "string"},
                    },
                },
                "headGroupSpec": {
                    "type": "object",
                    "required": ["template"],
                    "additionalProperties": False,
                    "properties": {
                        "rayStartParams": _STR_MAP,
                        "template": _TEMPLATE,
                        "serviceType": {"type": "string"},
                        "headService": {"type": "object"},
                        "enableIngress": {"type": "boolean"},
                    },
                },
                "workerGroupSpecs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["groupName", "minReplicas", "maxReplicas", "template"],
                        "additionalProperties": False,
                        "properties": {
                            "groupName": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 0},
                            "minReplicas": {"type": "integer", "minimum": 0},
                            "maxReplicas": {"type": "integer", "minimum": 0},
                            "idleTimeoutSeconds": {"type": "integer", "minimum": 0},
                            "numOfHosts": {"type": "integer", "minimum": 1},
                            "suspend": {"type": "boolean"},
                            "rayStartParams": _STR_MAP,
                            "template": _TEMPLATE,
                            "scaleStrategy": {"type": "object"},
                        },
                    },
                },
            },
        },
    },
}
#: Kubernetes core/v1 SecurityContext fields a container may set.
SECURITY_FIELDS = {
    "allowPrivilegeEscalation",
    "appArmorProfile",
    "capabilities",
    "privileged",
    "procMount",
    "readOnlyRootFilesystem",
    "runAsGroup",
    "runAsNonRoot",
    "runAsUser",
    "seLinuxOptions",
    "seccompProfile",
    "windowsOptions",
}
#: What the sandbox needs in its container (see the manifest's comment for why each).
NEEDED_CAPABILITIES = {"SYS_ADMIN", "SETUID", "SETGID", "KILL", "SYS_CHROOT"}


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    docs = list(yaml.safe_load_all((KUBERAY / "raycluster.yaml").read_text()))
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


def containers(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    spec = cluster["spec"]
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    return [c for g in groups for c in g["template"]["spec"]["containers"]]


def workers(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        c for g in cluster["spec"]["workerGroupSpecs"] for c in g["template"]["spec"]["containers"]
    ]


def test_the_raycluster_matches_kuberays_documented_fields(cluster: dict[str, Any]) -> None:
    jsonschema.validate(cluster, RAYCLUSTER_SCHEMA)
    for group in cluster["spec"]["workerGroupSpecs"]:
        assert group["minReplicas"] <= group.get("replicas", 0) <= group["maxReplicas"]
    # The schema rejects what it should: a misspelt field is an error, not ignored.
    bad = {**cluster, "spec": {**cluster["spec"], "workerGroupSpec": []}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, RAYCLUSTER_SCHEMA)


def test_an_autoscaled_cpu_group_and_a_head_without_work(cluster: dict[str, Any]) -> None:
    spec = cluster["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    (group,) = spec["workerGroupSpecs"]
    assert group["maxReplicas"] > group["minReplicas"] >= 1
    for c in workers(cluster):
        res = c["resources"]
        assert res["requests"] == res["limits"], "Guaranteed QoS for the sandbox's node"
        assert {"cpu", "memory"} <= set(res["requests"])


def test_the_sandbox_gets_what_it_needs_and_no_more(cluster: dict[str, Any]) -> None:
    for c in workers(cluster):
        sc = c["securityContext"]
        assert set(sc) <= SECURITY_FIELDS, set(sc) - SECURITY_FIELDS
        assert sc["privileged"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        added = set(sc["capabilities"]["add"])
        assert NEEDED_CAPABILITIES <= added
        assert not any(cap.startswith("CAP_") for cap in added)  # Kubernetes spells them bare
        assert added.isdisjoint({"SYS_PTRACE", "SYS_MODULE", "NET_ADMIN", "SYS_RAWIO"})
        for profile in ("seccompProfile", "appArmorProfile"):
            assert sc[profile]["type"] in ("RuntimeDefault", "Unconfined", "Localhost")
        # Kubernetes refuses allowPrivilegeEscalation: false together with SYS_ADMIN.
        assert sc.get("allowPrivilegeEscalation", True) is True
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    assert all("securityContext" not in c for c in head), "the head runs no sandbox"


def test_containers_start_ray_as_kuberay_generates_it(cluster: dict[str, Any]) -> None:
    assert cluster["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    ray_containers = [c for c in containers(cluster) if c["name"].startswith("ray-")]
    assert len(ray_containers) == 2
    for c in ray_containers:
        assert c["command"] == ["/bin/bash", "-c", "--"]
        assert c["args"][0].rstrip().endswith("$KUBERAY_GEN_RAY_START_CMD")
    for c in workers(cluster):
        assert "assay-cgroup-setup &&" in c["args"][0]


def test_the_driver_container_runs_a_real_assay_command(cluster: dict[str, Any]) -> None:
    from assay.cli import app

    (serve,) = [c for c in containers(cluster) if c["name"] == "assay-serve"]
    assert serve["command"] == ["/opt/assay/bin/assay"]
    args = serve["args"]
    assert args[0] == "serve" and "--ray" in args
    help_text = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200).output
    for flag in (a for a in args[1:] if a.startswith("--")):
        assert flag in help_text, flag


def test_the_image_installs_assay_its_toolchains_and_the_cgroup_setup(
    cluster: dict[str, Any],
) -> None:
    recipe = (KUBERAY / "Containerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    wanted: set[str] = set()
    for var in ("APT_PACKAGES", "APT_LANGUAGES"):
        m = re.search(rf"^{var} := ((?:.*\\\n)*.*)$", makefile, re.M)
        assert m, var
        wanted |= set(m.group(1).replace("\\\n", " ").split())
    missing = [p for p in sorted(wanted) if not re.search(rf"\s{re.escape(p)}(\s|\\)", recipe)]
    assert not missing, f"Containerfile lacks Debian packages the Makefile installs: {missing}"
    assert "[ray" in recipe and "/usr/local/bin/assay-cgroup-setup" in recipe
    version = re.search(r"^ARG RAY_VERSION=(\S+)$", recipe, re.M)
    assert version and version.group(1) == cluster["spec"]["rayVersion"]
    images = {c["image"] for c in containers(cluster)}
    assert len(images) == 1, "every pod runs the one Assay image"


def test_the_cgroup_setup_script_is_valid_shell() -> None:
    sh = shutil.which("sh")
    assert sh is not None
    proc = subprocess.run([sh, "-n", str(KUBERAY / "cgroup-setup.sh")], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    text = (KUBERAY / "cgroup-setup.sh").read_text()
    assert '"+memory +pids +cpu"' in text  # the controllers the sandbox's cgroups use
