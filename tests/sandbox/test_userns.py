"""Assay run by an unprivileged user: isolation through a user namespace.

The supervisor runs as an unused uid (``setpriv`` from this root test; not 65534, whose
processes other tests hunt as sandbox leftovers). On a cgroup v1 host the memory and pids
controllers cannot be delegated to such a user, so:

* without ``insecure=True`` the Sandbox refuses, naming the missing cgroup controllers, and
  ``assay doctor`` reports them;
* with ``insecure=True`` programs still run in their own user, PID, mount and network
  namespaces, with seccomp, as uid 65534, without sight of the host's files.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: The unprivileged user running the supervisor: a uid no account uses, so nothing of ours
#: is mistaken for another test's sandboxed process (those run as 65534 on the host).
HOST_UID = HOST_GID = 61234
#: What the program sees inside the sandbox (mapped onto HOST_UID by the user namespace).
UID = GID = 65534
VENV_BIN = Path(sys.executable).parent
ASSAY_CLI = VENV_BIN / "assay"

PROGRAM = r"""
import json, os, socket
status = dict(
    line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line
)
print(json.dumps({
    "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
    "pid": os.getpid(),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "host_tree": os.path.exists("/work/main"),
    "root_home": os.path.exists("/root"),
    "seccomp": status["Seccomp"].strip(),
    "no_new_privs": status["NoNewPrivs"].strip(),
    "cap_eff": status["CapEff"].strip(),
    "hostname": socket.gethostname(),
    "uid_map": open("/proc/self/uid_map").read().split(),
}))
"""

#: An executable (bash), which starts from the C launcher: it must end up just as bare.
EXEC_PROGRAM = r"""
echo "$(id -u) $(id -g) $(grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' \
  /proc/self/status | awk '{print $2}' | tr '\n' ' ')"
"""

SUPERVISOR = f"""
import json, os
import assay
from assay import Limits

out = {{"uid": os.getuid()}}
report = assay.probe_host()
out["report"] = {{**report.to_dict(), "missing": report.missing_mandatory()}}
try:
    assay.Sandbox().close()
    out["refused"] = None
except assay.InsecureHostError as exc:
    out["refused"] = {{"missing": exc.missing, "message": str(exc)}}
sandbox = assay.Sandbox(assay.SandboxConfig(insecure=True))
out["insecure"] = sandbox.insecure
with assay.Runner(sandbox=sandbox) as runner:
    out["run"] = runner.run({PROGRAM!r}).to_json_dict()
    out["spin"] = runner.run("while True: pass", limits=Limits(time_s=0.5)).to_json_dict()
    out["exec"] = runner.run({EXEC_PROGRAM!r}, "bash").to_json_dict()
    out["zygote"] = runner.sandbox.zygote_info
print(json.dumps(out))
"""


def _as_user(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "COLUMNS": "200",
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        ["setpriv", f"--reuid={HOST_UID}", f"--regid={HOST_GID}", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd="/",
        check=False,
    )


@pytest.fixture(scope="module")
def unprivileged() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to start a process as uid 65534")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    try:
        pwd.getpwuid(HOST_UID)
        pytest.skip(f"uid {HOST_UID} belongs to an account here; the test needs an unused one")
    except KeyError:
        pass
    probe = _as_user([sys.executable, "-c", "import assay"], timeout=60)
    if probe.returncode != 0:
        pytest.skip(
            f"uid {HOST_UID} cannot run {sys.executable} with assay importable (the venv or the "
            f"source tree is not readable by others): {probe.stderr.strip()[-300:]}"
        )


@pytest.fixture(scope="module")
def outcome(unprivileged: None) -> dict[str, Any]:
    proc = _as_user([sys.executable, "-c", SUPERVISOR])
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["uid"] == HOST_UID
    if not out["report"]["userns"]:
        pytest.skip("unprivileged user namespaces are disabled on this host")
    return out


def test_refused_without_insecure_naming_cgroups(outcome: dict[str, Any]) -> None:
    refused = outcome["refused"]
    assert refused is not None, "Sandbox() must refuse when cgroups are missing"
    assert "cgroup memory controller" in refused["missing"]
    assert "cgroup pids controller" in refused["missing"]
    assert "cgroup memory controller" in refused["message"]
    assert "insecure" in refused["message"].lower()
    # Namespaces and seccomp are available to an unprivileged user: only cgroups are missing.
    assert all(m.startswith("cgroup ") for m in refused["missing"]), refused["missing"]


def test_report_explains_missing_cgroups(outcome: dict[str, Any]) -> None:
    report = outcome["report"]
    assert report["root"] is False
    assert report["userns"] is True
    assert all(report["namespaces"].values()), report["namespaces"]
    assert report["seccomp"] is True
    if report["cgroup_version"] == "v1":
        assert any("not delegable" in n for n in report["notes"]), report["notes"]
    assert report["cgroup_controllers"].get("memory") is False
    assert report["cgroup_controllers"].get("pids") is False


def test_doctor_cli_reports_missing_cgroups(unprivileged: None) -> None:
    proc = _as_user([str(ASSAY_CLI), "doctor", "--json"])
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    doc = json.loads(proc.stdout)
    assert "cgroup memory controller" in doc["missing_mandatory"]
    assert "cgroup pids controller" in doc["missing_mandatory"]
    human = _as_user([str(ASSAY_CLI), "doctor"])
    assert human.returncode == 3
    assert "cgroup memory controller" in human.stdout
    assert "not delegable" in human.stdout or doc["cgroup_version"] != "v1"


def test_insecure_run_is_still_namespaced(outcome: dict[str, Any]) -> None:
    assert outcome["insecure"] is True
    run = outcome["run"]
    assert run["status"] == "ok", run
    seen = json.loads(run["stdout"])
    assert (seen["uid"], seen["euid"], seen["gid"]) == (UID, UID, GID)
    assert seen["pid"] <= 3, f"expected an own PID namespace, got pid {seen['pid']}"
    assert len(seen["pids"]) <= 3, f"/proc shows host processes: {seen['pids']}"
    assert seen["host_tree"] is False, "/work/main of the host is visible"
    assert seen["root_home"] is False
    assert seen["seccomp"] == "2", "seccomp filter mode expected"
    assert seen["no_new_privs"] == "1"
    assert int(seen["cap_eff"], 16) == 0
    assert seen["hostname"] == "sandbox"
    # One uid mapped: the sandbox's 65534 is the unprivileged supervisor's own uid outside.
    assert seen["uid_map"] == [str(UID), str(HOST_UID), "1"]


def test_insecure_run_still_stops_a_spinning_program(outcome: dict[str, Any]) -> None:
    spin = outcome["spin"]
    assert spin["status"] == "time_limit", spin
    assert spin["wall_s"] < 10


def test_executables_start_from_the_launcher_with_nothing_left(outcome: dict[str, Any]) -> None:
    assert outcome["zygote"].get("launcher") is True, outcome["zygote"]
    run = outcome["exec"]
    assert run["status"] == "ok", run
    uid, gid, *rest = run["stdout"].split()
    assert (int(uid), int(gid)) == (UID, GID)
    caps, no_new_privs, seccomp = rest[:5], rest[5], rest[6]
    assert [int(c, 16) for c in caps] == [0] * 5, caps
    assert (no_new_privs, seccomp) == ("1", "2")
