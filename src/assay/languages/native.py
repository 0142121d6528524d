"""C and C++ (gcc/g++ inside the sandbox), and prebuilt executables."""

from __future__ import annotations

from dataclasses import dataclass

from .. import defaults
from ..types import Limits
from .base import Build, Program, tool_version

COMPILE_LIMITS = Limits(
    time_s=defaults.COMPILE_TIME_S,
    memory_mb=defaults.COMPILE_MEMORY_MB,
    processes=defaults.COMPILE_PROCESSES,
    output_bytes=1 << 20,
    disk_mb=256,
)


@dataclass(eq=False)  # a registry entry: compared and hashed by identity
class GccFamily:
    """gcc for C, g++ for C++: -O2, a selectable standard, statically nothing exotic."""

    name: str
    compiler: str
    std: str
    extensions: tuple[str, ...]
    src: str

    def toolchain(self) -> str:
        return f"{self.compiler}:{tool_version(self.compiler)}:-std={self.std}"

    def build(self, source: bytes) -> Build:
        argv = [
            f"/usr/bin/{self.compiler}",
            "-O2",
            f"-std={self.std}",
            "-pipe",
            "-o",
            "main",
            self.src,
            "-lm",
            # HumanEval-X's C++ md5 task uses OpenSSL; --as-needed links it only when used.
            "-Wl,--as-needed",
            "-lcrypto",
            # Threads: part of libc since glibc 2.34, a library of its own before (a task
            # image's older Debian); --as-needed keeps it out of programs without threads.
            "-pthread",
        ]
        return Build(argv, [(self.src, source, 0o644)], "main", COMPILE_LIMITS)

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        assert artifact is not None
        return Program("exec", [f"{defaults.WORK_DIR}/main"], [("main", artifact, 0o755)])


class Executable:
    """A prebuilt binary: ``code`` is the file's bytes."""

    name = "executable"
    extensions: tuple[str, ...] = ()

    def toolchain(self) -> str:
        return "executable"

    def build(self, source: bytes) -> Build | None:
        return None

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        return Program("exec", [f"{defaults.WORK_DIR}/main"], [("main", source, 0o755)])
