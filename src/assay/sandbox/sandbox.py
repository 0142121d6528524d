"""The sandbox pool: a warm fork server, per-run cgroups, and the trusted supervision loop."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import itertools
import json
import os
import re
import socket
import threading

from .. import defaults
from ..errors import InsecureHostError, SandboxError, ValidationError
from ..types import ExecResult, Limits
from . import cgroups
from ._inside import pyrun, wire
from ._launch import encode_spec
from ._request import files_over_memory, validate_request
from ._run import RunRequest, Supervision
from ._slots import CgroupPool, SlotHandle
from ._uids import UidPool, check_range
from ._zygote import ZygoteProcess
from .config import SandboxConfig
from .probe import HostReport, probe_host

COLLECT_MAX_BYTES = 256 << 20


class Sandbox:
    """A reusable pool of isolated sandboxes (thread-safe; use one per process).

    >>> with Sandbox() as sb:                                     # doctest: +SKIP
    ...     sb.execute(RunRequest("python", ["/work/main.py"], [("main.py", b"print(1)", 0o644)]))
    """

    #: A run's ``companion`` is polled by the thread that supervises it (``_run.Supervision``).
    serves_companions = True

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
                self.cgroups.reclaim_stale()
        self._ids = itertools.count()
        #: One host uid/gid per slot (as root); None: every slot runs as ``config.uid``.
        self.uids: UidPool | None = None
        if self.config.per_slot_ids():
            check_range(self.config.uid_base, self.config.uid_count)
            self.uids = UidPool(self.config.uid_base, self.config.uid_count)
        self._lock = threading.Lock()
        self._zygote: ZygoteProcess | None = None
        self._closed = False
        self._ncpu = len(os.sched_getaffinity(0))
        #: Runs going on (slots taken and not yet released), counted for the idle-priority
        #: background (``config.background_idle``) only.
        self._running = 0
        #: Idle armed slots by kind (C launcher or Python program process; loopback up, with
        #: the seccomp filter that allows IP sockets, or not), kept for reuse so a run starts
        #: without creating namespaces.
        self._idle: dict[tuple[bool, bool], collections.deque[SlotHandle]] = {
            (launcher, net): collections.deque()
            for launcher in (False, True)
            for net in (False, True)
        }
        #: Idle slots kept per kind (more where each reset waits for normal RCU grace
        #: periods: see ``defaults.SLOTS_PER_CPU_SLOW_RCU``).
        per_cpu = (
            defaults.SLOTS_PER_CPU_SLOW_RCU
            if self.report.slow_grace_periods
            else defaults.SLOTS_PER_CPU
        )
        self.pool_size = pool_size if pool_size is not None else max(4, per_cpu * self._ncpu)
        self._cg_pool = (
            CgroupPool(self.cgroups, _cg_limits(Limits()), spare=max(2, self._ncpu))
            if self.cgroups is not None
            else None
        )

    # -- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [slot for kind in self._idle.values() for slot in kind]
            for kind in self._idle.values():
                kind.clear()
        for slot in idle:
            self._retire(slot)
        with self._lock:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
        if self._cg_pool is not None:
            self._cg_pool.close()
        if self.cgroups is not None:
            self.cgroups.close()
        if self.uids is not None:
            self.uids.close()

    def _zygote_for_run(self) -> ZygoteProcess:
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            if self._zygote is None or not self._zygote.alive:
                if self._zygote is not None:
                    self._zygote.close()
                self._zygote = ZygoteProcess(self.config)
            return self._zygote

    @property
    def idle_slots(self) -> int:
        """Armed slots waiting for a run (each holds one program process, not yet running)."""
        with self._lock:
            return sum(len(kind) for kind in self._idle.values())

    @property
    def zygote_info(self) -> dict[str, object]:
        """What the running fork server reported at start (launcher, native set-up, ...)."""
        z = self._zygote
        return dict(z.info) if z is not None else {}

    @property
    def zygote_pid(self) -> int | None:
        z = self._zygote
        return z.proc.pid if z is not None else None

    # -- slots ----------------------------------------------------------------------------
    def _new_slot(self, zygote: ZygoteProcess, launcher: bool, net: bool = False) -> SlotHandle:
        """Ask the fork server for one more slot, and arm it (returns before it is ready)."""
        sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        uid = self.uids.take() if self.uids is not None else None
        msg: dict[str, object] = {
            "op": "slot",
            "id": f"{next(self._ids)}",
            "max_runs": defaults.SLOT_MAX_RUNS,
            "net": net,  # a slot's runs all have loopback networking, or none does
        }
        if uid is not None:
            msg["uid"] = msg["gid"] = uid
        try:
            zygote.send(msg, [child.fileno()])
        except SandboxError:
            sock.close()
            if uid is not None and self.uids is not None:
                self.uids.give_back(uid, None)
            raise
        finally:
            child.close()
        slot = SlotHandle(sock, zygote, launcher, net)
        slot.uid = uid
        # (Not for a pool that keeps no slot: each run's slot would be calibrated and gone.)
        slot.calibrate = (
            self.config.prefault
            and self.pool_size > 0
            and not launcher
            and bool(zygote.info.get("native_fork"))
        )
        self._arm(slot)
        return slot

    def _arm(self, slot: SlotHandle, idle: bool = False) -> None:
        cg = self._cg_pool.get() if self._cg_pool is not None else None
        try:
            slot.arm(cg, idle)
        except OSError:
            if cg is not None and self._cg_pool is not None:
                self._cg_pool.dispose(cg)
            raise

    def _acquire(self, mode: str, net: bool = False) -> SlotHandle:
        """A ready, armed slot for ``mode``: the longest-idle one if any (so the others
        finish resetting in the background), else a new one."""
        error = ""
        attempts = calibrations = 0
        while attempts < defaults.ZYGOTE_RESTARTS * 2:
            attempts += 1
            zygote = self._zygote_for_run()
            launcher = mode == "exec" and bool(zygote.info.get("launcher"))
            with self._lock:
                idle = self._idle[launcher, net]
                slot = idle.popleft() if idle else None
            if slot is not None and slot.zygote is not zygote:
                self._retire(slot)
                continue
            if slot is None:
                try:
                    slot = self._new_slot(zygote, launcher, net)
                except (SandboxError, OSError) as exc:
                    error = str(exc)
                    continue
            if self._take(slot):
                if slot.calibrate:  # the slot's first run, then it is idle again
                    result = self._calibrate(slot)
                    calibrations += 1
                    if result.status == "ok" and calibrations <= self.pool_size:
                        attempts -= 1  # not a failed attempt
                    elif result.status != "ok":
                        error = f"calibration run: {result.status} {result.stderr[-500:]!r}"
                    continue
                return slot
            error = slot.error
            self._retire(slot)
        raise SandboxError(f"no sandbox became ready: {error}")

    def _take(self, slot: SlotHandle) -> bool:
        """Mark ``slot`` taken by a run and wait until it is ready and armed; whether it is
        (counted among the runs going on if so: ``_release`` counts it out)."""
        with slot.lock:
            slot.in_use = True
            ok = slot.wait_ready(defaults.ZYGOTE_START_TIMEOUT_S) and slot.wait_armed(
                defaults.ZYGOTE_START_TIMEOUT_S
            )
        if ok and self.config.background_idle:
            with self._lock:
                self._running += 1
        return ok

    def _calibrate(self, slot: SlotHandle) -> ExecResult:
        """A fresh slot's first run, the supervisor's own ``print(1)``: its program process
        reports the pages it wrote (``pyrun.CALIBRATE``), which go to the slot's
        init before its next arm order; each later program process of the slot faults them
        in before it says "armed" (launcher.c's ``prefault``), so a run's ~280 page faults
        after its request become the slot's background work. Learned from this run only: no
        tenant's run shapes another's process. A calibration that reports no pages only leaves
        the slot without them."""
        slot.calibrate = False
        files = [("main.py", b"print(1)\n", 0o644)]
        req = RunRequest("python", ["/work/main.py", pyrun.CALIBRATE], files)
        return self._run_in(slot, req, files, [], calibrating=True)

    def _release(self, slot: SlotHandle, reusable: bool) -> None:
        slot.runs += 1
        idle = keep = False
        with self._lock:
            if self.config.background_idle:
                self._running -= 1
                # The slot's work after its next run (its reset, the arming after it) may
                # wait at idle priority for moments the CPUs have nothing else to do while
                # fewer runs than CPUs are going on; with more, runs wait for slots: not then.
                idle = self._running < self._ncpu
            if reusable and slot.runs < defaults.SLOT_MAX_RUNS:
                keep = not self._closed and len(self._idle[slot.kind]) < self.pool_size
        if keep:
            try:
                self._arm(slot, idle)
            except OSError:
                keep = False
        if keep:
            with self._lock:
                slot.in_use = False
                self._idle[slot.kind].append(slot)
            return
        self._retire(slot)

    def _retire(self, slot: SlotHandle) -> None:
        if slot.uid is not None and self.uids is not None:
            # Reused once the slot's init (and so every process of the slot) is gone.
            watch = os.dup(slot.pidfd) if slot.pidfd is not None else None
            self.uids.give_back(slot.uid, watch)
            slot.uid = None
        slot.close()
        if slot.cg is not None and self._cg_pool is not None:
            self._cg_pool.dispose(slot.cg)
            slot.cg = None

    def warm_up(self, slots: int | None = None, exec_slots: int | None = None) -> None:
        """Start the fork server and armed sandboxes now instead of on first use: ``slots``
        for Python programs and ``exec_slots`` for executables (default: the pool size, and
        one per core)."""
        zygote = self._zygote_for_run()
        want = self.pool_size if slots is None else slots
        n_exec = (
            (self._ncpu if exec_slots is None else exec_slots) if zygote.info.get("launcher") else 0
        )
        # Up to that many idle, never past the pool size: a second executor on one runner
        # (or a second call) tops the pool up instead of growing it, each slot holding a
        # cgroup's descriptors and a socket (it grew by ~45 descriptors per executor).
        with self._lock:
            need_py = min(want, self.pool_size) - len(self._idle[False, False])
            need_exec = min(n_exec, self.pool_size) - len(self._idle[True, False])
        fresh = [self._new_slot(zygote, False) for _ in range(max(0, need_py))]
        fresh += [self._new_slot(zygote, True) for _ in range(max(0, need_exec))]
        for slot in fresh:
            if not slot.wait_ready(defaults.ZYGOTE_START_TIMEOUT_S):
                self._retire(slot)
                continue
            if slot.calibrate:  # now, not on a caller's first run; back to idle after it
                if self._take(slot):
                    self._calibrate(slot)
                else:
                    self._retire(slot)
                continue
            with self._lock:
                keep = not self._closed and len(self._idle[slot.kind]) < self.pool_size
                if keep:
                    self._idle[slot.kind].append(slot)
            if not keep:
                self._retire(slot)

    # -- running ----------------------------------------------------------------------------
    def execute(self, req: RunRequest) -> ExecResult:
        """Run one request to completion. Never raises for the program's behaviour."""
        try:
            return self._execute(req)
        finally:
            for (
                fd
            ) in req.pass_fds:  # ownership passed to the sandbox: the run holds the only copies
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _execute(self, req: RunRequest) -> ExecResult:
        files, collect = validate_request(req)
        too_big = files_over_memory(files, req.limits)
        if too_big is not None:
            return too_big
        try:
            slot = self._acquire(req.mode, req.network == "loopback")
        except SandboxError as exc:
            return ExecResult(status="sandbox_error", stderr=str(exc).encode())
        # No silent re-run here: a run whose sandbox failed under it is reported as
        # sandbox_error (our fault); retrying is the scheduler's decision.
        return self._run_in(slot, req, files, collect)

    def _run_in(
        self,
        slot: SlotHandle,
        req: RunRequest,
        files: list[tuple[str, bytes, int]],
        collect: list[str],
        calibrating: bool = False,
    ) -> ExecResult:
        limits = req.limits
        cg = slot.cg
        reusable = False
        own: list[int] = []
        try:
            if cg is not None:
                try:
                    cg_limits = _cg_limits(limits, req.cpu_weight)
                    cg.arm(cg_limits)
                    if self._cg_pool is not None:
                        self._cg_pool.note_limits(cg_limits)
                except OSError as exc:
                    return ExecResult(status="sandbox_error", stderr=f"cgroup: {exc}".encode())
            out_r, out_w = os.pipe2(os.O_CLOEXEC)
            err_r, err_w = os.pipe2(os.O_CLOEXEC)
            own += [out_r, err_r]
            rlimits = (
                limits.file_bytes,
                defaults.OPEN_FILES,
                min(defaults.STACK_MB, limits.memory_mb) << 20,
                int(limits.time_s) + 2,
            )
            wanted = {"paths": collect, "max_bytes": COLLECT_MAX_BYTES}
            try:
                spec_bytes, contents = encode_spec(
                    req.mode,
                    req.argv,
                    req.env,
                    rlimits,
                    files,
                    json.dumps(wanted).encode() if collect else b"",
                )
            except ValueError as exc:
                raise ValidationError("argv", str(exc)) from exc
            # Everything about the run travels in fds the slot's init passes on unread.
            child_fds = [
                out_w,
                err_w,
                wire.memfd_with(contents, "files"),
                wire.sealed_memfd(req.stdin, "stdin"),
                wire.memfd_with(spec_bytes, "spec"),
            ]
            header = {"op": "run"}
            sup = Supervision(req, cg, self._ncpu)
            assert slot.req_sock is not None
            if limits.disk_mb != defaults.DEFAULT_DISK_MB and not slot.resize(
                limits.disk_mb, defaults.ZYGOTE_START_TIMEOUT_S
            ):
                for fd in child_fds:
                    os.close(fd)
                return ExecResult(status="sandbox_error", stderr=f"resize: {slot.error}".encode())
            try:
                wire.send(slot.req_sock, header, [*child_fds, *req.pass_fds])
            except OSError as exc:
                return ExecResult(status="sandbox_error", stderr=f"dispatch: {exc}".encode())
            finally:
                for fd in child_fds:
                    os.close(fd)
            for fd in (out_r, err_r):  # a new pipe's only flag: one fcntl, not get and set
                fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)
            result = sup.wait(slot.req_sock, slot.sock, out_r, err_r, slot.kill_run, slot.kill_slot)
            if calibrating:
                slot.first_order = _prefault_order(result)
            # After a kill order the slot's init has cleaned up; only a destroyed slot is lost.
            reusable = not sup.hard_killed and (
                sup.exit_record is not None or sup.kill_reason is not None
            )
            return result
        finally:
            for fd in own:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if cg is not None and self._cg_pool is not None:
                self._cg_pool.release(cg, reuse=reusable)
            slot.cg = None
            slot.end_run()
            # Synchronous on purpose: when a run returns, a slot that is not kept is already
            # torn down (a re-arm off the caller's path saved ~1 ms but let a retired slot's
            # processes outlive the call).
            self._release(slot, reusable)


#: A line of a calibration run's page report: "address bytes".
_PAGES_LINE = re.compile(rb"[0-9]{1,20} [0-9]{1,20}")


def _prefault_order(result: ExecResult) -> bytes | None:
    """The order that gives a slot's init the pages its calibration run reported (after
    the program's own "1"), or None if the run did not report them as it should."""
    head, _, report = result.stdout.partition(b"\n")
    lines = report.splitlines()
    if result.status != "ok" or result.stdout_truncated or head != b"1" or not lines:
        return None
    if len(lines) > 2048:
        return None
    if not all(_PAGES_LINE.fullmatch(line) for line in lines):
        return None
    return wire.PREFAULT + report


def _cg_limits(limits: Limits, cpu_weight: int = 100) -> cgroups.CgroupLimits:
    return cgroups.CgroupLimits(limits.memory_mb << 20, limits.processes, cpu_weight)
