"""Core value types shared by every layer (names are public API, see DESIGN.md)."""

from __future__ import annotations

import base64
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from . import defaults
from .errors import ValidationError

#: How a run can fail (a run's status, and the judge's verdict of the same name).
Failure = Literal[
    "runtime_error",
    "time_limit",
    "memory_limit",
    "output_limit",
    "compile_error",
    "sandbox_error",
]
Status = Literal["ok", Failure]
#: How process output travels in JSON: ``utf-8`` (decoded, invalid bytes replaced by
#: U+FFFD: readable) or ``base64`` (the exact bytes).
OutputEncoding = Literal["utf-8", "base64"]
#: A run's network: none at all, or a namespace of its own with ``lo`` up.
Network = Literal["none", "loopback"]


def check_network(value: object, field: str = "network") -> Network:
    """``value`` if it names a run's network, else ValidationError naming ``field``."""
    if value not in get_args(Network):
        raise ValidationError(field, f"must be 'none' or 'loopback', not {value!r}")
    return value  # type: ignore[return-value]


#: The isolation tiers: ``default`` (namespaces, seccomp, Landlock, cgroups) and ``gvisor``
#: (the same program under gVisor's user-space kernel, for code that must not reach the
#: host kernel).
Isolation = Literal["default", "gvisor"]
ISOLATIONS: tuple[str, ...] = get_args(Isolation)


def check_isolation(value: object, field: str = "isolation") -> Isolation:
    """``value`` if it names an isolation tier, else ValidationError naming ``field``."""
    if value not in ISOLATIONS:
        raise ValidationError(field, f"{value!r} is not one of {', '.join(ISOLATIONS)}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a job's sandbox is: rooted at task ``image`` (an id, id prefix or name in the
    image store; None: the host's root) in isolation tier ``isolation`` (None: the runner's
    own). Every job kind carries one (``RunJob.placement``, ``Problem.placement``, a
    session's); it is checked here once and trusted below (``Runner.placed``)."""

    image: str | None = None
    isolation: Isolation | None = None

    def __post_init__(self) -> None:
        if self.image is not None and (not isinstance(self.image, str) or not self.image):
            raise ValidationError("image", "must be a non-empty image id or name")
        if self.isolation is not None:
            check_isolation(self.isolation)


def encode_output(data: bytes, encoding: OutputEncoding) -> str:
    """``data`` as a JSON string in ``encoding``."""
    if encoding == "base64":
        return base64.b64encode(data).decode("ascii")
    return data.decode("utf-8", errors="replace")


STATUSES: tuple[str, ...] = get_args(Status)

# Upper bounds that stop absurd requests before they reach the kernel.
_MAX_TIME_S = 3600.0
_MAX_MEMORY_MB = 64 * 1024
_MAX_PROCESSES = 4096
_MAX_BYTES = 1 << 34


def _check_number(name: str, value: float, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"limits.{name}", f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < low or value > high:
        raise ValidationError(f"limits.{name}", f"must be between {low} and {high}, got {value}")


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one run.

    ``time_s`` is CPU seconds and decides the verdict; ``wall_s`` is only a backstop for
    programs that sleep or block (default ``3 * time_s + 1``).
    """

    time_s: float = defaults.TIME_S
    wall_s: float | None = None
    memory_mb: int = defaults.MEMORY_MB
    processes: int = defaults.PROCESSES
    output_bytes: int = defaults.OUTPUT_BYTES
    file_bytes: int = defaults.FILE_BYTES
    disk_mb: int = defaults.DISK_MB

    def __post_init__(self) -> None:
        _check_number("time_s", self.time_s, 0.001, _MAX_TIME_S)
        if self.wall_s is not None:
            _check_number("wall_s", self.wall_s, 0.001, _MAX_TIME_S * 4)
        _check_number("memory_mb", self.memory_mb, 8, _MAX_MEMORY_MB)
        _check_number("processes", self.processes, 1, _MAX_PROCESSES)
        _check_number("output_bytes", self.output_bytes, 0, _MAX_BYTES)
        _check_number("file_bytes", self.file_bytes, 0, _MAX_BYTES)
        _check_number("disk_mb", self.disk_mb, 1, _MAX_MEMORY_MB)

    @property
    def effective_wall_s(self) -> float:
        return self.wall_s if self.wall_s is not None else defaults.wall_for(self.time_s)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one process run in a sandbox did, as measured by the trusted side."""

    status: Status
    exit_code: int | None = None
    signal: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    cpu_s: float = 0.0
    wall_s: float = 0.0
    peak_memory_bytes: int = 0
    #: Processes of the run still alive when its program exited (killed at teardown): a
    #: daemon or a detached child left behind on purpose.
    leftover_processes: int = 0
    # Not part of the JSON shape: files collected from the work dir on request.
    files: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    def to_json_dict(self, output_encoding: OutputEncoding = "utf-8") -> dict[str, Any]:
        """Exactly the ExecResult fields of DESIGN.md, output decoded as UTF-8 (lossy), or
        with ``output_encoding="base64"`` the exact bytes in base64."""
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "stdout": encode_output(self.stdout, output_encoding),
            "stderr": encode_output(self.stderr, output_encoding),
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "cpu_s": round(self.cpu_s, 6),
            "wall_s": round(self.wall_s, 6),
            "peak_memory_bytes": self.peak_memory_bytes,
        }
