"""The sandbox layer: the only code that touches namespaces, cgroups, seccomp and mounts."""

from ._request import files_disk_bytes
from ._run import Companion, RunRequest
from .config import ISOLATIONS, SandboxConfig, check_isolation
from .gvisor import GVisorSandbox
from .probe import HostReport, probe_host
from .sandbox import COLLECT_MAX_BYTES, Sandbox


def open_sandbox(
    config: SandboxConfig | None = None, pool_size: int | None = None
) -> Sandbox | GVisorSandbox:
    """The sandbox pool of ``config``'s isolation tier."""
    config = config or SandboxConfig()
    if config.isolation == "gvisor":
        return GVisorSandbox(config, pool_size)
    return Sandbox(config, pool_size)


__all__ = [
    "COLLECT_MAX_BYTES",
    "ISOLATIONS",
    "Companion",
    "GVisorSandbox",
    "HostReport",
    "RunRequest",
    "Sandbox",
    "SandboxConfig",
    "check_isolation",
    "files_disk_bytes",
    "open_sandbox",
    "probe_host",
]
