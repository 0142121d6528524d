"""The sandbox layer: the only code that touches namespaces, cgroups, seccomp and mounts."""

from ._run import RunRequest
from .config import SandboxConfig
from .probe import HostReport, probe_host
from .sandbox import Sandbox

__all__ = ["HostReport", "RunRequest", "Sandbox", "SandboxConfig", "probe_host"]
