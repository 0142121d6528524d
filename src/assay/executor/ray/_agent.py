"""The node agent: one Ray actor per node, holding that node's warm sandbox pool.

The driver keeps the global queue and decides what runs next; an agent only runs what it
was sent, as its slots free up, and hands results back in groups when the driver polls.
It never holds more work than the driver chose to send (its slots plus a small prefetch), so
a slow or busy node does not sit on queued work another node could run.

Several agents may share one host (the test cluster runs three nodes on one machine, and a
Kubernetes node can hold several Ray pods). Each agent takes a block of sandbox user ids of
its own (a lock file per block, released by the kernel when the agent dies, even by
SIGKILL), so two agents never hand the same uid to two live sandboxes; cgroups need no such
care, as each supervisor already names its cgroup directory after its own pid and start time.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import defaults
from ...errors import ConfigError, ValidationError
from .._jobs import Memory, memory_budget
from .._workers import start_workers
from ..backend import Backend
from ..types import Execution
from ._wire import MISSING, Item, ProblemCache, Result, encode_execution

if TYPE_CHECKING:
    from ...sandbox import RunRequest
    from ...sessions import ExecStep, SessionBase, StepResult
    from ...types import ExecResult

log = logging.getLogger("assay.executor.ray")

#: The agent's concurrency group for session calls (each blocks a thread for its step), so
#: sessions never hold up the driver's ``submit`` and ``poll``; and its size: calls beyond
#: it on one node wait for one to finish.
SESSIONS = "sessions"
SESSION_CALLS = 64
#: What the driver may call on a session held here besides a shell step (which has its own
#: typed call, :meth:`NodeAgent.session_step`): ``RemoteSession`` forwards each of these
#: ``Session`` methods, and counts the steps among them as steps.
SESSION_STEPS = frozenset({"run_cell"})
SESSION_METHODS = SESSION_STEPS | {
    "write_file", "read_file", "list_files", "delete_file", "download_tar", "upload_tar", "ping",
}  # fmt: skip

#: Where agents on one host take their uid blocks (``ASSAY_AGENT_LOCK_DIR`` overrides).
LOCK_DIR = "/run/assay/agents"
#: Most agents one host holds (each takes a block of ``ASSAY_UID_COUNT`` ids).
MAX_AGENTS_PER_HOST = 64


def claim_uid_block() -> tuple[int, int, int]:
    """Take the first free uid block of this host: ``(index, fd holding it, base)``.

    Sets ``ASSAY_UID_BASE``/``ASSAY_UID_COUNT`` of this process to the block, before any
    sandbox reads them. The lock is an ``flock`` on a file, held by the open fd, so a killed
    agent's block frees itself and the agent that replaces it may take it again.
    """
    base = int(os.environ.get("ASSAY_UID_BASE") or defaults.UID_BASE)
    count = int(os.environ.get("ASSAY_UID_COUNT") or defaults.UID_COUNT)
    lock_dir = os.environ.get("ASSAY_AGENT_LOCK_DIR", LOCK_DIR)
    try:
        os.makedirs(lock_dir, exist_ok=True)
    except PermissionError:  # not root: a per-user place on the same host
        lock_dir = os.path.join(tempfile.gettempdir(), f"assay-agents-{os.getuid()}")
        os.makedirs(lock_dir, exist_ok=True)
    # Block 0 is the range every other Assay process on the host uses (a LocalExecutor, the
    # server, tests): agents start at block 1.
    for index in range(1, MAX_AGENTS_PER_HOST + 1):
        fd = os.open(os.path.join(lock_dir, f"uids-{base}-{index}.lock"), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.environ["ASSAY_UID_BASE"] = str(base + index * count)
        os.environ["ASSAY_UID_COUNT"] = str(count)
        return index, fd, base + index * count
    raise ConfigError(
        f"more than {MAX_AGENTS_PER_HOST} Assay node agents on host {socket.gethostname()}"
    )


class NodeAgent:
    """Runs the jobs the driver sends on this node's sandboxes (made a Ray actor by the
    driver, with ``max_concurrency`` so :meth:`poll` does not block :meth:`submit`), and
    holds the sessions the driver opened on this node (:mod:`._sessions`)."""

    def __init__(
        self,
        slots: int,
        backend_factory: Callable[[], Backend] | None = None,
        reward: Any = None,
        memory_budget_mb: int | None = None,
    ) -> None:
        self.slots = slots
        self.index, self._lock_fd, self.uid_base = claim_uid_block()
        self.host = socket.gethostname()
        self.name = f"{self.host}/a{self.index}"
        self._runner = None
        if backend_factory is None:
            from ...runner import Runner
            from ..backend import SandboxBackend

            self._runner = Runner()
            backend: Backend = SandboxBackend(self._runner, reward)
            self._runner.warm_up(2 * slots)
        else:
            backend = backend_factory()
        self.backend = backend
        self._problems = ProblemCache()
        self._memory = Memory(memory_budget_mb or memory_budget())
        # One lock, two conditions: slots wait for work, the driver's poll for results, and
        # neither wakes the other's waiters.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._results = threading.Condition(self._lock)
        self._inbox: collections.deque[Item] = collections.deque()
        self._outbox: list[Result] = []
        self._closed = False
        from ...sessions._held import HeldSessions

        self._sessions = HeldSessions()
        self._session_lock = threading.Lock()
        self._threads = start_workers(self._work, [f"{self.name}/w{i}" for i in range(slots)])

    # -- called by the driver ---------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": self.host,
            "pid": os.getpid(),
            "slots": self.slots,
            "uid_base": self.uid_base,
            "uid_count": int(os.environ["ASSAY_UID_COUNT"]),
        }

    def submit(self, items: list[Item], problems: dict[str, Any]) -> None:
        """Queue ``items`` (in the driver's order); ``problems`` has the problems they use
        that the driver had not sent here yet, by key (a pickle, or an object reference for
        a large one), kept here for the items after them (``_wire``)."""
        self._problems.resolve(problems, (i[1][1] for i in items if i[1][0] == "s"))
        with self._cond:
            self._inbox.extend(items)
            self._cond.notify(len(items))

    def drop(self, tokens: list[int]) -> None:
        """Forget queued items nobody waits for (deadline, cancel); each comes back from
        :meth:`poll` with no execution, so the driver can count its slot free again."""
        gone = set(tokens)
        with self._cond:
            keep = [i for i in self._inbox if i[0] not in gone]
            dropped = [i for i in self._inbox if i[0] in gone]
            self._inbox = collections.deque(keep)
            self._outbox += [(i[0], None, 0.0, self.name) for i in dropped]
            if dropped:
                self._results.notify_all()

    def poll(
        self,
        timeout_s: float,
        batch: int = 1,
        linger_s: float = 0.0,
        items: list[Item] | None = None,
        problems: dict[str, Any] | None = None,
    ) -> list[Result]:
        """Every result since the last poll; waits up to ``timeout_s`` for the first, then
        up to ``linger_s`` more for ``batch`` of them while work is still queued here (each
        poll and each refill is a Ray call, which costs more machine time than the job's own
        dispatch: grouping them is what keeps a cluster near a local executor's throughput).
        It answers at once when nothing is queued, so no slot waits for work meanwhile.

        ``items`` (with their ``problems``) are queued first, as :meth:`submit` queues
        them: the driver sends the refill for the results it just took with its next poll,
        one call instead of two."""
        if items:
            self.submit(items, problems or {})
        with self._lock:
            self._results.wait_for(lambda: bool(self._outbox) or self._closed, timeout_s)
            end = time.monotonic() + linger_s
            while self._outbox and len(self._outbox) < batch and self._inbox and not self._closed:
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._results.wait(left)
            out, self._outbox = self._outbox, []
        return out

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cond.notify_all()
            self._results.notify_all()
        for t in self._threads:
            t.join(timeout=30)
        with self._session_lock:
            sessions = list(self._sessions.open.values())
        for session in sessions:
            with contextlib.suppress(Exception):
                session.close()
        if self._runner is not None:
            self._runner.close()

    # -- sessions held on this node (called in the SESSIONS concurrency group) -------------
    def _session_runner(self) -> Any:
        with self._session_lock:
            if self._runner is None:  # a test backend: sessions still get real sandboxes
                from ...runner import Runner

                self._runner = Runner()
            return self._runner

    def _hold(self, session: SessionBase) -> dict[str, Any]:
        def forget(gone: SessionBase) -> None:
            with self._session_lock:
                self._sessions.ended(gone, gone.end_reason or "closed")

        with self._session_lock:
            self._sessions.open[session.id] = session
        session.on_end(forget)
        if session.ended:
            forget(session)
        return {"id": session.id, "episode_id": session.episode_id, **session.settings()}

    def _session(self, session_id: str) -> SessionBase:
        from ...sessions import SessionEnded

        with self._session_lock:
            found = self._sessions.find(session_id)
        if found is not None:
            return found
        raise SessionEnded(session_id, "node_lost", f"node agent {self.name} does not hold it")

    # Each call below answers with its value or raises (an Assay error reaches the driver
    # whole: ``errors.AssayError`` pickles; Ray hands it over as the cause of its own).
    def session_open(self, files: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Open a session on this node: its attributes, for the driver's proxy."""
        from ...sessions import Session

        return self._hold(Session(self._session_runner(), files, **kwargs))

    def session_step(self, session_id: str, step: ExecStep) -> StepResult:
        """One shell step of a session held here."""
        return self._session(session_id).step(step)

    def session_call(
        self, session_id: str, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """One of the session's other calls (``SESSION_METHODS``: files, cells, ping)."""
        if method not in SESSION_METHODS:
            raise ValidationError("method", f"no session method {method!r}")
        return getattr(self._session(session_id), method)(*args, **kwargs)

    def session_fork(self, session_id: str, child_id: str | None) -> dict[str, Any]:
        """Fork a session held here; the child is held here too (same node)."""
        return self._hold(self._session(session_id).fork(child_id))

    def session_end(self, session_id: str, reason: str, detail: str) -> ExecResult | None:
        """End a session; answers once its sandbox is gone, with the run's result."""
        session = self._session(session_id)
        session.end(reason, detail)
        return session.result

    def session_execute(self, request: RunRequest, pipe: bool) -> tuple[ExecResult, bytes]:
        """One sandbox run on this node (a session's verification runs its tests here):
        ``(result, bytes)``. An fd cannot cross machines, so with ``pipe`` the run gets a
        pipe of this process as its fd 3, and what it wrote there comes back as the bytes."""
        import dataclasses

        if not pipe:
            return self._session_runner().execute(request), b""
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        chunks: list[bytes] = []

        def drain() -> None:
            while chunk := os.read(read_fd, 1 << 16):
                chunks.append(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            piped = dataclasses.replace(request, pass_fds=(write_fd,))  # execute closes it
            result = self._session_runner().execute(piped)
        finally:
            reader.join()
            os.close(read_fd)
        return result, b"".join(chunks)

    # -- slots ------------------------------------------------------------------------------
    def _work(self, name: str) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._inbox) or self._closed)
                if self._closed:
                    return
                token, payload, stop_on_failure, memory_mb = self._inbox.popleft()
                if not self._inbox and self._outbox:
                    self._results.notify()  # a lingering poll answers: nothing is queued
            job = self._problems.job(payload)
            if job is None:
                with self._lock:
                    self._outbox.append((token, MISSING, 0.0, name))
                    self._results.notify()
                continue
            started = time.monotonic()
            self._memory.acquire(memory_mb)
            try:
                ex = self.backend.execute(job, stop_on_failure)
            except Exception as exc:
                log.exception("backend failed on token %d", token)
                ex = Execution("sandbox_error", None, f"internal error: {exc!r}"[:500])
            finally:
                self._memory.release(memory_mb)
            result = (token, encode_execution(ex), time.monotonic() - started, name)
            with self._lock:
                self._outbox.append(result)
                self._results.notify()
