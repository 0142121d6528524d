"""Python: run in the warm fork server (no interpreter start per run)."""

from __future__ import annotations

from .. import defaults
from .base import Build, Program, tool_version


class Python:
    name = "python"
    extensions: tuple[str, ...] = (".py",)

    def __init__(self, interpreter: str = defaults.PYTHON_INTERPRETER) -> None:
        self.interpreter = interpreter

    def toolchain(self) -> str:
        return f"python:{self.interpreter}:{tool_version(self.interpreter)}"

    def build(self, source: bytes) -> Build | None:
        return None

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        return Program("python", [f"{defaults.WORK_DIR}/main.py"], [("main.py", source, 0o644)])
