"""The session layer's data types: limits of a whole session, one step's result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from .. import defaults
from ..errors import ValidationError

#: Why a session ended: closed by its owner, past its lifetime, idle too long, its CPU or
#: memory budget used up, its sandbox died under it, or (on a cluster) the node holding it
#: died: a session is never opened again elsewhere, empty.
#: ``pids_limit``: the session stayed at its process limit although everything finished
#: steps left running was killed (a step could not start).
EndReason = Literal[
    "closed", "ttl", "idle_ttl", "cpu_limit", "memory_limit", "pids_limit", "crashed", "node_lost"
]
#: ``pids_limit``: the step could not start (no process left to the session; it then ends);
#: ``cannot_start``: it could not start for another fault of the session's sandbox.
StepReason = Literal["timeout", "idle_timeout", "cpu_limit", "pids_limit", "cannot_start"]
STEP_REASONS: tuple[str, ...] = get_args(StepReason)
#: A session's largest CPU budget: it is one sandbox run, whose CPU limit is at most an hour.
MAX_CPU_S = defaults.SESSION_MAX_CPU_S


#: A session's longest TTL, and the longest wall limit of a run (``Limits.wall_s``).
MAX_TTL_S = 4 * 3600.0


def check_time(field: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(field, f"must be a number, got {value!r}")
    if not 0 < value <= MAX_TTL_S:
        raise ValidationError(field, f"must be in (0, {MAX_TTL_S:.0f}] seconds, got {value!r}")
    return float(value)


def _positive(field: str, value: float | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValidationError(field, f"must be a positive number, got {value!r}")


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Limits of a session: of all its steps and background processes together, and
    (``step_*``, ``None`` for none) of each process a step starts.

    The per-step limits bind each process, not a step's processes together (the session's
    own cgroup limits bind those), and a step's wall time is its ``timeout_s``.
    """

    #: Total CPU seconds of the session.
    cpu_s: float = 600.0
    #: Memory, processes and disk (/work and /tmp) at every moment.
    memory_mb: int = 512
    processes: int = 64
    disk_mb: int = 256
    #: Kept of each stream of each step.
    output_bytes: int = 1 << 20
    #: ``RLIMIT_CPU`` of each process a step starts: past it the process is killed and the
    #: step's ``reason`` is ``cpu_limit``.
    step_cpu_s: float | None = None
    #: ``RLIMIT_DATA`` of each process a step starts (heap and private writable mappings):
    #: an allocation past it fails (``MemoryError`` in Python).
    step_memory_mb: int | None = None

    def __post_init__(self) -> None:
        _positive("limits.cpu_s", self.cpu_s)
        _positive("limits.step_cpu_s", self.step_cpu_s, allow_none=True)
        step_mb = self.step_memory_mb
        if step_mb is not None and (
            isinstance(step_mb, bool) or not isinstance(step_mb, int) or step_mb < 16
        ):
            raise ValidationError(
                "limits.step_memory_mb", f"must be an integer >= 16, got {step_mb!r}"
            )
        for name in ("memory_mb", "processes", "disk_mb", "output_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValidationError(
                    f"limits.{name}", f"must be a positive integer, got {value!r}"
                )
        if self.cpu_s > MAX_CPU_S:
            raise ValidationError("limits.cpu_s", f"at most {MAX_CPU_S:g}, got {self.cpu_s!r}")
        if self.memory_mb < 32:
            raise ValidationError("limits.memory_mb", "a session needs at least 32 MiB")
        if self.processes < 4:
            raise ValidationError("limits.processes", "a session needs at least 4 processes")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The longest command a step takes (it travels as one line of JSON to the agent).
MAX_COMMAND_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class ExecStep:
    """One shell step, checked once where it is made (``Session.exec``, the HTTP route):
    every layer after that (``Session.step``, the awaited path, a Ray node's agent) takes
    it as it is. ``stdin`` is bytes; ``timeout_s`` / ``idle_timeout_s`` are seconds within
    a session's longest life (``idle_timeout_s`` None: no idle limit)."""

    command: str
    timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S
    idle_timeout_s: float | None = None
    stdin: bytes = b""

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ValidationError("command", "must be a non-empty string")
        if len(self.command) > MAX_COMMAND_CHARS:
            raise ValidationError("command", f"at most {MAX_COMMAND_CHARS:,} characters")
        object.__setattr__(self, "timeout_s", check_time("timeout_s", self.timeout_s))
        if self.idle_timeout_s is not None:
            idle = check_time("idle_timeout_s", self.idle_timeout_s)
            object.__setattr__(self, "idle_timeout_s", idle)
        stdin = self.stdin.encode() if isinstance(self.stdin, str) else self.stdin
        if not isinstance(stdin, bytes):
            raise ValidationError("stdin", "must be str or bytes")
        object.__setattr__(self, "stdin", stdin)


@dataclass(frozen=True, slots=True)
class StepResult:
    """One ``exec`` step. ``cpu_s`` and ``peak_memory_bytes`` are the step's shell and the
    processes it waited for (``wait4`` rusage, reported by the agent inside the sandbox:
    informative, not a verdict; background processes are not counted)."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    reason: StepReason | None
    cpu_s: float
    wall_s: float
    peak_memory_bytes: int

    def to_dict(self) -> dict[str, Any]:
        # Field by field, not ``asdict`` (a deep copy of both outputs): once per step.
        return {name: getattr(self, name) for name in _STEP_FIELDS}


_STEP_FIELDS = tuple(f.name for f in fields(StepResult))


@runtime_checkable
class SessionLike(Protocol):
    """What ``Session`` and a remote session (``assay.client.RemoteSession``) both are:
    the methods an agent adapter steps an episode with, with the same results."""

    id: str

    @property
    def ended(self) -> bool: ...

    def exec(
        self,
        command: str,
        timeout_s: float = ...,
        idle_timeout_s: float | None = None,
        stdin: str | bytes = b"",
    ) -> StepResult: ...

    def step(self, step: ExecStep) -> StepResult: ...

    def run_cell(self, code: str, timeout_s: float = ...) -> CellResult: ...

    def write_file(self, path: str, content: str | bytes) -> None: ...

    def read_file(self, path: str) -> bytes: ...

    def list_files(self, directory: str = ".") -> list[dict[str, Any]]: ...

    def delete_file(self, path: str) -> None: ...

    def download_tar(self, directory: str = ".", gzip: bool = False) -> bytes: ...

    def upload_tar(self, data: bytes, directory: str = ".") -> None: ...

    def fork(self) -> SessionLike: ...

    def verify(self, diagnosis: Any = None) -> Any: ...

    def episode_rewards(self) -> Any: ...

    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class CellResult:
    """One notebook cell run in the session's persistent Python interpreter."""

    status: str  # ok, error, timeout, or died (``detail`` says how)
    stdout: str
    stderr: str
    display: list[dict[str, str]]
    error: list[dict[str, Any]]
    restarted: bool = False
    #: Why the interpreter died, in words (its exit status, or the session's memory
    #: limit), when ``status`` says it did.
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
