"""What isolation this host offers (``assay doctor``), and which of it is mandatory."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import defaults
from ..errors import ConfigError
from ._cgroupfs import _mountinfo, _read
from ._inside import landlock, linux
from ._uids import check_range
from .cgroups import CGROUP_FS, V1_CONTROLLERS, V1_CPU_SHARES, V1_OPTIONAL, V2_CPU_WEIGHT
from .config import SandboxConfig

#: 1 when the kernel turns every expedited RCU grace period into a normal one (set by hand,
#: or after boot on a PREEMPT_RT kernel: ``rcupdate.rcu_normal_after_boot``).
RCU_NORMAL = "/sys/kernel/rcu_normal"

NS_FLAGS = (
    ("mount", linux.CLONE_NEWNS),
    ("pid", linux.CLONE_NEWPID),
    ("network", linux.CLONE_NEWNET),
    ("ipc", linux.CLONE_NEWIPC),
    ("uts", linux.CLONE_NEWUTS),
)


@dataclass
class HostReport:
    root: bool
    userns: bool
    namespaces: dict[str, bool] = field(default_factory=dict)
    cgroup_version: str = "none"
    cgroup_controllers: dict[str, bool] = field(default_factory=dict)
    #: How each run gets an equal CPU share ("" when it cannot: runs then share the
    #: supervisor's CPU group, one scheduling share per session a program makes).
    cpu_weights: str = ""
    #: Host ids sandboxed programs run as: a range, one id per slot (as root), or the single
    #: id of user-namespace mode; and whether no host account uses them.
    sandbox_ids: str = ""
    sandbox_ids_ok: bool = True
    seccomp: bool = False
    seccomp_detail: str = ""
    landlock_abi: int = 0
    python: str = ""
    python_ok: bool = False
    #: The kernel's RCU grace periods are normal, not expedited (``rcu_normal``): each
    #: mount a slot's reset detaches then waits ~20 ms instead of ~38 us.
    slow_grace_periods: bool = False
    notes: list[str] = field(default_factory=list)

    def missing_mandatory(self) -> list[str]:
        missing = [f"{name} namespace" for name, ok in self.namespaces.items() if not ok]
        for c in ("memory", "pids"):
            if not self.cgroup_controllers.get(c):
                missing.append(f"cgroup {c} controller")
        if not self.seccomp:
            missing.append("seccomp")
        return missing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _try_unshare(flags: int) -> bool:
    pid = os.fork()
    if pid == 0:
        try:
            linux.unshare(flags)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _cgroups(report: HostReport, cfg: SandboxConfig) -> None:
    v1: dict[str, str] = {}
    v2_mount = None
    for _root, point, fstype, opts in _mountinfo():
        if fstype == "cgroup2" and v2_mount is None:
            v2_mount = point
        if fstype == "cgroup":
            for c in V1_CONTROLLERS + V1_OPTIONAL:
                if c in opts.split(","):
                    v1[c] = point
    if v2_mount is not None:
        try:
            ctrls = set(_read(os.path.join(v2_mount, "cgroup.controllers")).split())
        except OSError:
            ctrls = set()
        if {"memory", "pids", "cpu"} & ctrls:
            report.cgroup_version = "v2"
            writable = report.root or cfg.cgroup_root is not None
            if not writable:
                report.notes.append(
                    "cgroup v2 without root: needs a delegated subtree (systemd-run --user -p Delegate=yes)"
                )
            for c in ("memory", "pids", "cpu"):
                report.cgroup_controllers[c] = c in ctrls and writable
            if report.cgroup_controllers["cpu"]:
                report.cpu_weights = f"v2 cpu.weight={V2_CPU_WEIGHT} per run"
            return
    if v1:
        report.cgroup_version = "v1"
        for c in V1_CONTROLLERS + V1_OPTIONAL:
            report.cgroup_controllers[c] = c in v1 and os.access(v1[c], os.W_OK)
        if report.cgroup_controllers.get("cpu"):
            report.cpu_weights = f"v1 cpu.shares={V1_CPU_SHARES} per run"
        if not report.root:
            report.notes.append("cgroup v1 is not delegable to unprivileged users")
    elif not os.path.isdir(CGROUP_FS):
        report.notes.append("no cgroup file system mounted")


def _ids(report: HostReport, cfg: SandboxConfig) -> None:
    if cfg.per_slot_ids():
        first, last = cfg.uid_base, cfg.uid_base + cfg.uid_count - 1
        report.sandbox_ids = f"uid/gid {first}..{last}, one per slot"
        try:
            check_range(cfg.uid_base, cfg.uid_count)
        except ConfigError as exc:
            report.sandbox_ids_ok = False
            report.notes.append(str(exc))
    else:
        report.sandbox_ids = f"uid/gid {cfg.uid}/{cfg.gid} for every slot (user namespace)"


def _slow_grace_periods() -> bool:
    try:
        return _read(RCU_NORMAL).strip() == "1"
    except OSError:  # no such knob (older kernels, or /sys not mounted): expedited as usual
        return False


def probe_host(cfg: SandboxConfig | None = None) -> HostReport:
    cfg = cfg or SandboxConfig()
    root = os.geteuid() == 0
    report = HostReport(root=root, userns=_try_unshare(linux.CLONE_NEWUSER))
    extra = 0 if root else linux.CLONE_NEWUSER
    if not root and not report.userns:
        report.notes.append("not root and user namespaces are disabled: no isolation possible")
    for name, flag in NS_FLAGS:
        report.namespaces[name] = (root or report.userns) and _try_unshare(flag | extra)
    _cgroups(report, cfg)
    _ids(report, cfg)
    lib = ctypes.util.find_library("seccomp")
    kernel_seccomp = "Seccomp:" in _read("/proc/self/status")
    report.seccomp = bool(lib) and kernel_seccomp and cfg.seccomp
    report.seccomp_detail = (
        f"libseccomp={lib or 'missing'}, kernel={'yes' if kernel_seccomp else 'no'}"
        + ("" if cfg.seccomp else ", disabled by config")
    )
    report.landlock_abi = landlock.abi_version() if cfg.landlock else 0
    report.python = cfg.python
    report.python_ok = shutil.which(cfg.python) is not None or os.access(cfg.python, os.X_OK)
    if not report.python_ok:
        report.notes.append(f"sandbox interpreter {cfg.python} not found")
    report.slow_grace_periods = _slow_grace_periods()
    if report.slow_grace_periods:
        report.notes.append(
            f"{RCU_NORMAL} is 1 (normal RCU grace periods, as on a PREEMPT_RT kernel): a "
            "slot's reset takes ~75 ms instead of ~2 ms, so the sandbox keeps "
            f"{defaults.SLOTS_PER_CPU_SLOW_RCU} idle slots per CPU instead of "
            f"{defaults.SLOTS_PER_CPU}"
        )
    return report
