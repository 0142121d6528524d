"""``probe_host`` (what ``assay doctor`` shows) and the refusal to run without a mandatory control."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import assay
from assay import InsecureHostError, Runner, Sandbox, SandboxConfig, probe_host

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="this host's full report needs root")


def test_this_host_offers_every_mandatory_control() -> None:
    report = probe_host()
    assert report.missing_mandatory() == []
    assert report.root is True
    assert set(report.namespaces) == {"mount", "pid", "network", "ipc", "uts"}
    assert all(report.namespaces.values()), report.namespaces
    assert report.cgroup_version in ("v1", "v2")
    for controller in ("memory", "pids", "cpu"):
        assert report.cgroup_controllers.get(controller) is True, report.cgroup_controllers
    assert report.seccomp is True
    assert "libseccomp=" in report.seccomp_detail
    assert report.python_ok is True
    d = report.to_dict()
    assert d["seccomp"] is True and d["namespaces"] == report.namespaces


def test_cgroup_v1_reported_on_this_host() -> None:
    with open("/proc/self/mountinfo") as fh:
        v1 = any(" - cgroup " in line for line in fh)
    if not v1:
        pytest.skip("not a cgroup v1 host")
    assert probe_host().cgroup_version == "v1"


def test_seccomp_disabled_is_reported_missing() -> None:
    report = probe_host(SandboxConfig(seccomp=False))
    assert report.seccomp is False
    assert report.missing_mandatory() == ["seccomp"]
    assert "disabled by config" in report.seccomp_detail


def test_sandbox_refuses_without_seccomp() -> None:
    with pytest.raises(InsecureHostError) as info:
        Sandbox(SandboxConfig(seccomp=False))
    assert info.value.missing == ["seccomp"]
    assert "seccomp" in str(info.value)
    assert isinstance(info.value, assay.ConfigError)


def test_missing_interpreter_is_reported() -> None:
    report = probe_host(SandboxConfig(python="/nonexistent/python3"))
    assert report.python_ok is False
    assert any("/nonexistent/python3" in note for note in report.notes)


def test_insecure_opt_out_runs_and_is_flagged() -> None:
    sandbox = Sandbox(SandboxConfig(seccomp=False, insecure=True))
    with Runner(sandbox=sandbox) as runner:
        assert runner.sandbox.insecure is True
        r = runner.run(
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])"
        )
        assert r.status == "ok", r
        assert r.stdout == b"0\n"  # really without the filter: the opt-out is not cosmetic


def test_secure_sandbox_is_not_flagged(runner: Runner) -> None:
    assert runner.sandbox.insecure is False
    r = runner.run(
        "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])"
    )
    assert (r.status, r.stdout) == ("ok", b"2\n")


def test_report_names_the_sandbox_id_range_and_cpu_weights() -> None:
    cfg = SandboxConfig()
    report = probe_host(cfg)
    first, last = cfg.uid_base, cfg.uid_base + cfg.uid_count - 1
    assert report.sandbox_ids == f"uid/gid {first}..{last}, one per slot"
    assert report.sandbox_ids_ok is True
    assert report.cpu_weights.endswith("per run"), report.cpu_weights
    taken = probe_host(SandboxConfig(uid_base=1, uid_count=2))  # daemon, bin on Debian
    assert taken.sandbox_ids_ok is False
    assert any("used on this host" in note for note in taken.notes)


def test_doctor_prints_the_id_range_and_cpu_weight(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    out = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "assay"), "doctor"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "160"},
        check=False,
    ).stdout
    assert "sandbox user ids" in out and "one per slot" in out
    assert "per-run CPU weight" in out


def _with_rcu_normal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str | None) -> None:
    """Point the probe at a stand-in for ``/sys/kernel/rcu_normal`` (None: no such file)."""
    from assay.sandbox import probe

    knob = str(tmp_path / "rcu_normal")
    if value is not None:
        with open(knob, "w") as fh:
            fh.write(value)
    monkeypatch.setattr(probe, "RCU_NORMAL", knob)


@pytest.mark.parametrize(("value", "slow"), [("1\n", True), ("0\n", False), (None, False)])
def test_normal_rcu_grace_periods_are_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str | None, slow: bool
) -> None:
    _with_rcu_normal(monkeypatch, tmp_path, value)
    report = probe_host()
    assert report.slow_grace_periods is slow
    assert any("rcu_normal" in note for note in report.notes) is slow
    assert report.to_dict()["slow_grace_periods"] is slow


@pytest.mark.parametrize(("value", "per_cpu"), [("1\n", 16), ("0\n", 4)])
def test_the_default_pool_grows_where_grace_periods_are_normal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, per_cpu: int
) -> None:
    """Each slot reset waits for a grace period at each of its four unmounts: ~75 ms where
    they are normal, so 4 idle slots per CPU served 110 print(1) runs/s there, 16 served
    540-560 (``benchmarks/host_factors.py --parts rcu``)."""
    _with_rcu_normal(monkeypatch, tmp_path, value)
    ncpu = len(os.sched_getaffinity(0))
    with Sandbox() as sandbox:
        assert sandbox.pool_size == max(4, per_cpu * ncpu)
    with Sandbox(pool_size=5) as sandbox:  # an explicit size stands
        assert sandbox.pool_size == 5


@pytest.mark.alone  # sets a host-wide kernel knob for a moment: no other test may share it
def test_the_real_rcu_normal_knob_is_read() -> None:
    from assay.sandbox import probe

    try:
        with open(probe.RCU_NORMAL) as fh:
            was = fh.read().strip()
    except OSError:
        pytest.skip(f"this kernel has no {probe.RCU_NORMAL}")
    try:
        for value, slow in (("1", True), ("0", False)):
            with open(probe.RCU_NORMAL, "w") as fh:
                fh.write(value)
            assert probe_host().slow_grace_periods is slow
    finally:
        with open(probe.RCU_NORMAL, "w") as fh:
            fh.write(was)
