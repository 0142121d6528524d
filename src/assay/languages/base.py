"""What a language is to Assay: how to build a program and how to run it.

A language turns source into a :class:`Build` (a compile step run in its own sandbox, or
nothing) and into a :class:`RunRequest` for the sandbox layer. Adding a language is one small
module and one registry line.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, Protocol

from .. import defaults
from ..sandbox import RunRequest
from ..types import Limits


@dataclass(frozen=True, slots=True)
class Build:
    """A compile step: run ``argv`` over ``files`` in a sandbox, then collect ``artifact``."""

    argv: list[str]
    files: list[tuple[str, bytes, int]]
    artifact: str
    limits: Limits


@dataclass(frozen=True, slots=True)
class Program:
    """Everything needed to run a built program (compiled artefact or source)."""

    mode: Literal["python", "exec"]
    argv: list[str]
    files: list[tuple[str, bytes, int]] = field(default_factory=list)


class Language(Protocol):
    name: str
    extensions: tuple[str, ...]

    def toolchain(self) -> str:
        """A version string; part of every cache key."""

    def build(self, source: bytes) -> Build | None:
        """The compile step, or None for interpreted languages."""

    def program(self, source: bytes, artifact: bytes | None) -> Program: ...


class Interpreted:
    """A language whose source runs as it is (no build step): saved as ``file`` in the work
    dir and run by ``launcher`` (an argv; the fork server's Python with ``mode="python"``).
    Its toolchain is ``tool``'s version and ``details``, joined by colons."""

    def __init__(
        self,
        name: str,
        extensions: tuple[str, ...],
        file: str,
        launcher: Sequence[str],
        tool: str,
        details: Sequence[str] = (),
        mode: Literal["python", "exec"] = "exec",
    ) -> None:
        self.name = name
        self.extensions = extensions
        self.file = file
        self.launcher = list(launcher)
        self.tool = tool
        self.details = tuple(details)
        self.mode: Literal["python", "exec"] = mode

    def toolchain(self) -> str:
        return ":".join([self.tool, tool_version(self.tool), *self.details])

    def build(self, source: bytes) -> Build | None:
        return None

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        path = f"{defaults.WORK_DIR}/{self.file}"
        return Program(self.mode, [*self.launcher, path], [(self.file, source, 0o644)])


def request(
    program: Program, stdin: bytes, limits: Limits, files: list[tuple[str, bytes, int]]
) -> RunRequest:
    return RunRequest(program.mode, program.argv, [*files, *program.files], stdin, limits)


@lru_cache(maxsize=32)
def tool_version(binary: str) -> str:
    """First line of ``binary --version`` (cached), or ``missing``."""
    path = shutil.which(binary)
    if path is None:
        return "missing"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout or out.stderr).decode(errors="replace").strip().splitlines()
    return text[0] if text else "unknown"
