"""What a language is to Assay: how to build a program and how to run it.

A language turns source into a :class:`Build` (a compile step run in its own sandbox, or
nothing) and into a :class:`RunRequest` for the sandbox layer. Adding a language is one small
module and one registry line.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, Protocol

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
