"""Python: run in the warm fork server (no interpreter start per run)."""

from __future__ import annotations

from .. import defaults
from .base import Interpreted, tool_version


class Python(Interpreted):
    def __init__(self, interpreter: str = defaults.PYTHON_INTERPRETER) -> None:
        super().__init__("python", (".py",), "main.py", [], tool=interpreter, mode="python")
        self.interpreter = interpreter

    def toolchain(self) -> str:
        return f"python:{self.interpreter}:{tool_version(self.interpreter)}"
