"""Bash scripts, run by the host's /bin/bash (no build step).

Non-interactive bash reads no startup file unless ``BASH_ENV`` is set, and the sandbox's
environment is fixed, so a script starts the same way every run.
"""

from __future__ import annotations

from .. import defaults
from .base import Build, Program, tool_version

BASH = "/bin/bash"


class Bash:
    name = "bash"
    extensions: tuple[str, ...] = (".sh", ".bash")

    def toolchain(self) -> str:
        return f"bash:{tool_version('bash')}"

    def build(self, source: bytes) -> Build | None:
        return None

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        return Program("exec", [BASH, f"{defaults.WORK_DIR}/main.sh"], [("main.sh", source, 0o644)])
