"""What every session is, wherever its sandbox runs.

:class:`~assay.sessions.Session` (its sandbox on this machine) and
``assay.executor.ray.RemoteSession`` (a Ray node's, its calls forwarded there) are siblings
under :class:`SessionBase`: the state a session's owner, its manager, its reaper and its
verification read, the calls that are the same for both (``exec`` is ``step`` of an
``ExecStep``; ``verify``; ``info``), and the calls each does its own way. The HTTP client's
``RemoteSession`` is another sibling by shape (``SessionLike``), over HTTP.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..types import Placement
from . import _records
from . import verify as verification
from .types import CellResult, ExecStep, SessionLimits, StepResult

if TYPE_CHECKING:
    from ..sandbox import RunRequest
    from ..telemetry import RecordWriter
    from ..types import ExecResult, Isolation
    from ._download import Download

#: The keyword arguments of ``Session`` that say what kind of session it is (not which).
SETTINGS = (
    "limits", "ttl_s", "idle_ttl_s", "priority", "caller", "image", "isolation", "loopback",
)  # fmt: skip
DOWNLOAD_MAX = defaults.SESSION_DOWNLOAD_MAX_BYTES


class SessionBase:
    """A sandbox whose workspace (/work) and processes live from create to close."""

    id: str
    #: The episode its records belong to, and the task it verifies against, if any.
    episode_id: str
    task_id: str | None
    source: object
    limits: SessionLimits
    ttl_s: float
    idle_ttl_s: float
    priority: int
    caller: str
    #: Where the session's sandbox is (an image's pool is held until the session ends).
    image: str | None
    isolation: Isolation | None
    #: Whether the session's own network namespace has ``lo`` up.
    loopback: bool
    #: Where its steps and verifications are recorded (None: not here).
    records: RecordWriter | None
    created: float
    last_used: float
    steps: int
    busy: bool
    end_reason: str | None
    end_detail: str
    #: The sandbox run's own result, once it has ended.
    result: ExecResult | None
    _on_end: list[Callable[[SessionBase], None]]
    _state: threading.Lock
    _step_s: float
    #: How a sandbox request runs where the session is (its verification's tests).
    _execute: Callable[[RunRequest], ExecResult]

    # -- what both kinds do alike -------------------------------------------------------------
    def __enter__(self) -> SessionBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def on_end(self, fn: Callable[[SessionBase], None]) -> None:
        self._on_end.append(fn)

    @property
    def ended(self) -> bool:
        return self.end_reason is not None

    @property
    def placement(self) -> Placement:
        """Where the session's sandbox is: its image and isolation tier."""
        return Placement(self.image, self.isolation)

    def settings(self) -> dict[str, Any]:
        """What another session needs to be made like this one (a fork; a Ray driver's
        handle on a session its node holds): ``Session``'s keyword arguments."""
        return {name: getattr(self, name) for name in SETTINGS}

    def info(self) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "id": self.id,
            "state": "ended" if self.ended else ("busy" if self.busy else "idle"),
            "reason": self.end_reason,
            "detail": self.end_detail,
            "age_s": round(now - self.created, 3),
            "idle_s": round(now - self.last_used, 3),
            "steps": self.steps,
            "priority": self.priority,
            "caller": self.caller,
            "ttl_s": self.ttl_s,
            "idle_ttl_s": self.idle_ttl_s,
            "limits": self.limits.to_dict(),
            "episode_id": self.episode_id,
            "loopback": self.loopback,
            "image": self.image,
            "isolation": self.isolation,
        }

    def exec(
        self,
        command: str,
        timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S,
        idle_timeout_s: float | None = None,
        stdin: str | bytes = b"",
    ) -> StepResult:
        """Run ``command`` in the session's shell (cwd and exported variables carry over).

        At ``timeout_s``, or after ``idle_timeout_s`` with no output, the step's process
        group is killed and the output so far returned with ``timed_out`` and the reason.
        A step the session cannot start answers with ``reason`` ``pids_limit`` (the session
        then ends with that reason) or ``cannot_start``, and why on stderr.
        """
        data = stdin.encode() if isinstance(stdin, str) else stdin
        return self.step(ExecStep(command, timeout_s, idle_timeout_s, data))

    def verify(self, diagnosis: object = None) -> verification.VerifyResult:
        """Run the task's hidden tests on a snapshot of the workspace."""
        started = time.time()
        result = verification.verify(self, diagnosis)
        _records.write(self, "session_verify", "", started, _records.verified(result))
        return result

    def episode_rewards(self) -> verification.EpisodeRewards:
        """The final reward and the step rewards of the verifications so far."""
        return verification.episode(self)

    # -- what each kind does its own way --------------------------------------------------------
    def step(self, step: ExecStep) -> StepResult:
        """``exec`` of a step already made (and so checked)."""
        raise NotImplementedError

    def close(self) -> None:
        """End the session; when this returns, nothing of it is left where it ran."""
        raise NotImplementedError

    def end(self, reason: str, detail: str = "") -> None:
        """End the session for ``reason`` (the reaper's way: ``ttl``, ``idle_ttl``)."""
        raise NotImplementedError

    def fork(self, session_id: str | None = None) -> SessionBase:
        """A new session with a copy of this one's workspace."""
        raise NotImplementedError

    def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        raise NotImplementedError

    def read_file(self, path: str) -> bytes:
        raise NotImplementedError

    def list_files(self, directory: str = ".") -> list[dict[str, Any]]:
        raise NotImplementedError

    def delete_file(self, path: str) -> None:
        raise NotImplementedError

    def download_tar(
        self, directory: str = ".", gzip: bool = False, exclude: tuple[str, ...] = ()
    ) -> bytes:
        raise NotImplementedError

    def upload_tar(self, data: bytes, directory: str = ".") -> None:
        raise NotImplementedError

    def open_file(self, path: str, max_bytes: int = DOWNLOAD_MAX) -> Download:
        raise NotImplementedError

    def open_tar(
        self, directory: str = ".", gzip: bool = False, max_bytes: int = DOWNLOAD_MAX
    ) -> Download:
        raise NotImplementedError

    def run_cell(self, code: str, timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S) -> CellResult:
        raise NotImplementedError

    def ping(self) -> None:
        raise NotImplementedError
