"""Bash scripts, run by the host's /bin/bash (no build step).

Non-interactive bash reads no startup file unless ``BASH_ENV`` is set, and the sandbox's
environment is fixed, so a script starts the same way every run.
"""

from __future__ import annotations

from .base import Interpreted

BASH = "/bin/bash"


class Bash(Interpreted):
    def __init__(self) -> None:
        super().__init__("bash", (".sh", ".bash"), "main.sh", [BASH], tool="bash")
