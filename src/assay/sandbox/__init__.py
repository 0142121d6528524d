"""The sandbox layer: the only code that touches namespaces, cgroups, seccomp and mounts."""

from ._run import RunRequest
from .config import SandboxConfig
from .probe import HostReport, probe_host
from .sandbox import COLLECT_MAX_BYTES, Sandbox, files_disk_bytes

__all__ = [
    "COLLECT_MAX_BYTES",
    "HostReport",
    "RunRequest",
    "Sandbox",
    "SandboxConfig",
    "files_disk_bytes",
    "probe_host",
]
