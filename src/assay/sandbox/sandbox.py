"""The sandbox pool: a warm fork server, per-run cgroups, and the trusted supervision loop."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import os
import select
import socket
import threading

from .. import defaults
from ..errors import InsecureHostError, SandboxError, ValidationError
from ..types import ExecResult, Limits
from . import cgroups
from ._inside import wire
from ._run import RunRequest, Supervision
from ._zygote import ZygoteProcess
from .config import SandboxConfig
from .probe import HostReport, probe_host

_MAX_FILES = 1000


def _validate_path(field: str, path: str) -> str:
    norm = os.path.normpath(path)
    if not path or path.startswith("/") or norm.startswith("..") or "\x00" in path or norm == ".":
        raise ValidationError(field, f"path {path!r} must be relative and stay inside the work dir")
    return norm


class Sandbox:
    """A reusable pool of isolated sandboxes (thread-safe; use one per process).

    >>> with Sandbox() as sb:                                     # doctest: +SKIP
    ...     sb.execute(RunRequest("python", ["/work/main.py"], [("main.py", b"print(1)", 0o644)]))
    """

    def __init__(self, config: SandboxConfig | None = None, pool_size: int | None = None) -> None:
        self.config = config or SandboxConfig()
        self.report: HostReport = probe_host(self.config)
        missing = self.report.missing_mandatory()
        if missing and not self.config.insecure:
            raise InsecureHostError(missing)
        self.insecure = bool(missing)
        self.cgroups: cgroups.CgroupBackend | None = None
        if self.report.cgroup_version != "none":
            self.cgroups = cgroups.detect(self.config.cgroup_root)
            if self.cgroups is not None:
                self.reclaimed = self.cgroups.reclaim_stale()
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._zygote: ZygoteProcess | None = None
        self._closed = False
        self._ncpu = len(os.sched_getaffinity(0))
        self._deferred: list[cgroups.RunCgroup] = []
        self._idle: collections.deque[_Slot] = collections.deque()
        #: Armed sandboxes kept waiting, so a run starts without forks or mounts.
        self.pool_size = pool_size if pool_size is not None else self._ncpu + 1

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = list(self._idle), collections.deque()
        for slot in idle:
            self._discard(slot)
        with self._lock:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
        for cg in self._deferred:
            cg.destroy()
        if self.cgroups is not None:
            self.cgroups.close()

    def _zygote_for_run(self) -> ZygoteProcess:
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            if self._zygote is None or not self._zygote.alive:
                if self._zygote is not None:
                    self._zygote.close()
                self._zygote = ZygoteProcess(self.config)
            return self._zygote

    def warm_up(self) -> None:
        """Start the fork server now instead of on the first run."""
        self._zygote_for_run()

    @property
    def zygote_pid(self) -> int | None:
        z = self._zygote
        return z.proc.pid if z is not None else None

    # -- slots ----------------------------------------------------------------------------
    def _prepare(self, zygote: ZygoteProcess) -> _Slot:
        """Ask the fork server for one more armed sandbox (returns before it is ready)."""
        slot_id = f"{next(self._ids)}"
        cg = None
        if self.cgroups is not None:
            cg = self.cgroups.create(_cg_limits(Limits()))
        sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fds = [child.fileno()] + (cg.procs_fds() if cg is not None else [])
        try:
            zygote.send({"op": "prepare", "id": slot_id, "disk_mb": defaults.DISK_MB}, fds)
        except SandboxError:
            sock.close()
            if cg is not None:
                self._destroy(cg)
            raise
        finally:
            child.close()
            for fd in fds[1:]:
                os.close(fd)
        return _Slot(slot_id, sock, cg, zygote)

    def _acquire(self) -> _Slot:
        """An armed sandbox whose init has reported ready, replenishing the warm pool."""
        error = ""
        for _attempt in range(defaults.ZYGOTE_RESTARTS * 2):
            zygote = self._zygote_for_run()
            with self._lock:
                slot = self._idle.popleft() if self._idle else None
            if slot is None:
                slot = self._prepare(zygote)
            self._replenish(zygote)
            if slot.wait_ready(defaults.ZYGOTE_START_TIMEOUT_S):
                return slot
            error = slot.error
            self._discard(slot)
        raise SandboxError(f"no sandbox became ready: {error}")

    def _replenish(self, zygote: ZygoteProcess) -> None:
        while True:
            with self._lock:
                if self._closed or len(self._idle) >= self.pool_size:
                    return
            slot = self._prepare(zygote)
            with self._lock:
                self._idle.append(slot)

    def _discard(self, slot: _Slot) -> None:
        slot.close()
        if slot.cg is not None:
            slot.cg.kill_all()
            self._destroy(slot.cg)

    # -- running ----------------------------------------------------------------------------
    def execute(self, req: RunRequest) -> ExecResult:
        """Run one request to completion. Never raises for the program's behaviour."""
        if len(req.files) > _MAX_FILES:
            raise ValidationError("files", f"at most {_MAX_FILES} files per run")
        files = [(_validate_path(f"files[{p!r}]", p), c, m) for p, c, m in req.files]
        collect = [_validate_path(f"collect[{p!r}]", p) for p in req.collect]
        last: ExecResult | None = None
        for _attempt in range(defaults.ZYGOTE_RESTARTS):
            try:
                slot = self._acquire()
            except SandboxError as exc:
                return ExecResult(status="sandbox_error", stderr=str(exc).encode())
            result = self._run_in(slot, req, files, collect)
            if result.status != "sandbox_error" or slot.zygote.alive:
                return result
            last = result  # the fork server died under us: a new one gets a new try
        assert last is not None
        return last

    async def execute_async(self, req: RunRequest) -> ExecResult:
        return await asyncio.to_thread(self.execute, req)

    def _run_in(
        self, slot: _Slot, req: RunRequest, files: list[tuple[str, bytes, int]], collect: list[str]
    ) -> ExecResult:
        limits = req.limits
        own: list[int] = []
        try:
            out_r, out_w = os.pipe2(os.O_CLOEXEC)
            err_r, err_w = os.pipe2(os.O_CLOEXEC)
            own += [out_r, err_r]
            child_fds = [
                out_w,
                err_w,
                wire.memfd_with(wire.pack_files(files), "files"),
                _readonly_memfd(req.stdin),
            ]
            header = {
                "op": "run",
                "mode": req.mode,
                "argv": req.argv,
                "env": req.env,
                "disk_mb": limits.disk_mb,
                "collect": collect,
                "collect_max_bytes": 256 << 20,
                "rlimits": {
                    "file_bytes": limits.file_bytes,
                    "open_files": defaults.OPEN_FILES,
                    "stack_bytes": min(defaults.STACK_MB, limits.memory_mb) << 20,
                    "cpu_s": int(limits.time_s) + 2,
                },
            }
            try:
                if slot.cg is not None:
                    slot.cg.arm(_cg_limits(limits))
                sup = Supervision(req, slot.cg, self._ncpu)
                sup.pidfd = slot.take_pidfd()
                wire.send(slot.sock, header, child_fds)
            except OSError as exc:
                return ExecResult(status="sandbox_error", stderr=f"dispatch: {exc}".encode())
            finally:
                for fd in child_fds:
                    os.close(fd)
            for fd in (out_r, err_r):
                os.set_blocking(fd, False)
            return sup.wait(slot.sock, out_r, err_r, lambda: slot.zygote.kill_run(slot.id))
        finally:
            for fd in own:
                with contextlib.suppress(OSError):
                    os.close(fd)
            slot.close()
            if slot.cg is not None:
                self._destroy(slot.cg)

    def _destroy(self, cg: cgroups.RunCgroup) -> None:
        if not cg.destroy():
            cg.kill_all()
            if not cg.destroy():
                with self._lock:
                    self._deferred.append(cg)
        if self._deferred:
            with self._lock:
                pending, self._deferred = self._deferred, []
            still = [d for d in pending if not d.destroy()]
            with self._lock:
                self._deferred.extend(still)


class _Slot:
    """One armed sandbox: a PID-1 init and a privilege-less program process waiting for work."""

    def __init__(
        self, slot_id: str, sock: socket.socket, cg: cgroups.RunCgroup | None, zygote: ZygoteProcess
    ):
        self.id = slot_id
        self.sock = sock
        self.cg = cg
        self.zygote = zygote
        self.pidfd: int | None = None
        self.error = ""

    def wait_ready(self, timeout: float) -> bool:
        if self.pidfd is not None:
            return True
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            self.error = "timed out"
            return False
        try:
            msg, fds = wire.recv(self.sock)
        except (OSError, ValueError) as exc:
            self.error = str(exc)
            return False
        if msg is None or msg.get("kind") != "ready" or not fds:
            for fd in fds:
                os.close(fd)
            self.error = (msg or {}).get("message", "sandbox init exited")
            return False
        self.pidfd = fds[0]
        return True

    def take_pidfd(self) -> int | None:
        fd, self.pidfd = self.pidfd, None
        return fd

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        self.sock.close()


def _cg_limits(limits: Limits) -> cgroups.CgroupLimits:
    return cgroups.CgroupLimits(memory_bytes=limits.memory_mb << 20, pids=limits.processes)


def _readonly_memfd(data: bytes) -> int:
    fd = wire.memfd_with(data, "stdin")
    try:
        return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(fd)
