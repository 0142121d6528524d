"""Configuration of the sandbox runtime."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import defaults
from ..errors import ConfigError
from ..types import ISOLATIONS, check_isolation

__all__ = ["ISOLATIONS", "SandboxConfig", "check_isolation", "is_sandbox_uid"]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """How sandboxes are built on this host.

    ``python`` is the interpreter of the fork server and of Python programs inside the
    sandbox (a setting, because Debian's interpreter starts ~3x faster than a pyenv build).
    ``insecure=True`` allows running when a mandatory control (namespaces, cgroups,
    seccomp) is missing; results are then flagged, never silently trusted.
    """

    python: str = field(
        default_factory=lambda: os.environ.get("ASSAY_PYTHON", defaults.PYTHON_INTERPRETER)
    )
    insecure: bool = False
    #: "auto": root uses the real root; anyone else uses a user namespace.
    userns: str = "auto"
    #: Parent cgroup to use (cgroup v2 path); None to detect.
    cgroup_root: str | None = field(default_factory=lambda: os.environ.get("ASSAY_CGROUP_ROOT"))
    #: Where, in the fork server's private mount namespace, the sandbox root is assembled.
    mountpoint: str = "/tmp"
    ro_binds: tuple[str, ...] = defaults.RO_BINDS
    extra_ro_binds: tuple[str, ...] = ()
    etc_binds: tuple[str, ...] = defaults.ETC_BINDS
    preimport: tuple[str, ...] = defaults.PYTHON_PREIMPORT
    landlock: bool = True
    seccomp: bool = True
    #: Start exec-mode programs from the small C launcher (built on first use with the
    #: host's C compiler) instead of a fork of the Python fork server.
    launcher: bool = True
    uid: int = defaults.SANDBOX_UID
    gid: int = defaults.SANDBOX_GID
    #: The per-slot id range (uid == gid) used when running as root; see ``defaults``.
    uid_base: int = field(default_factory=lambda: _env_int("ASSAY_UID_BASE", defaults.UID_BASE))
    uid_count: int = field(default_factory=lambda: _env_int("ASSAY_UID_COUNT", defaults.UID_COUNT))
    #: A task image's root file system (``assay.images``): the fork server then runs the
    #: image's ``python`` (a path inside the image) with the image as its ``/``, and the
    #: sandbox's runtime binds come from the image instead of the host. None: the host.
    #: ``$ASSAY_IMAGE_ROOT`` sets it for every sandbox of the process.
    #: ``"default"`` (namespaces, cgroups, seccomp, Landlock on the host kernel) or
    #: ``"gvisor"`` (the hardened tier: programs run on gVisor's user-space kernel, see
    #: ``gvisor.py``). ``$ASSAY_ISOLATION`` sets it for every sandbox of the process.
    isolation: str = field(default_factory=lambda: os.environ.get("ASSAY_ISOLATION") or "default")
    #: Whether a slot does its work between runs (its reset, the next program process's
    #: arming) at idle priority where the host allows the way back (launcher.c's
    #: ``assay_background_idle``), while fewer runs than CPUs go on: faster at concurrency
    #: = cores; no program runs at idle priority (docs/explanations/performance.md).
    background_idle: bool = True
    #: Whether each slot of Python program processes learns, from a first run of the
    #: supervisor's own, the pages a run writes, and has each later program
    #: process fault them in before its request (launcher.c's ``prefault``; needs the C
    #: library): ~280 page faults fewer on a run's path.
    prefault: bool = True
    image_root: str | None = field(
        default_factory=lambda: os.environ.get("ASSAY_IMAGE_ROOT") or None
    )

    def __post_init__(self) -> None:
        check_isolation(self.isolation)

    def per_slot_ids(self) -> bool:
        """Whether each slot gets its own uid/gid (root, no user namespace)."""
        return not self.use_userns()

    def use_userns(self) -> bool:
        if self.userns == "auto":
            return os.geteuid() != 0
        return self.userns in ("1", "true", "yes", "on")


def is_sandbox_uid(uid: int) -> bool:
    """Whether host ``uid`` is one sandboxed programs run as (a slot's own id, or the shared
    one of user-namespace mode), with the range this process's environment configures."""
    base = _env_int("ASSAY_UID_BASE", defaults.UID_BASE)
    count = _env_int("ASSAY_UID_COUNT", defaults.UID_COUNT)
    return uid == defaults.SANDBOX_UID or base <= uid < base + count
