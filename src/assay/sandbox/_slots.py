"""Supervisor-side handles on slots, and a pool of ready cgroups."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import socket
import threading
import time

from .. import defaults
from ._inside import wire
from ._zygote import ZygoteProcess, readable
from .cgroups import CgroupBackend, CgroupLimits, RunCgroup


class SlotHandle:
    """One slot as the supervisor sees it: its init's socket, pidfd and armed cgroup."""

    def __init__(
        self, sock: socket.socket, zygote: ZygoteProcess, launcher: bool, net: bool = False
    ) -> None:
        self.sock = sock
        self.zygote = zygote
        #: Whether this slot's program processes are the C launcher (exec-mode runs only).
        self.launcher = launcher
        #: Whether its runs have loopback networking (``RunRequest.network``): ``lo`` up in
        #: the slot's own network namespace and a seccomp filter that allows IP sockets.
        self.net = net
        self.pidfd: int | None = None
        self.cg: RunCgroup | None = None
        self.req_sock: socket.socket | None = None  # to the armed program process
        self.prog_armed = False  # the program process's own "armed" has been read
        self.in_use = False  # taken by a run (set and read under ``lock``)
        #: Held while a thread reads this slot's messages.
        self.lock = threading.Lock()
        self.error = ""
        self.runs = 0
        #: The slot's own host uid (== gid), None when every slot shares one.
        self.uid: int | None = None
        #: Whether the slot's first run is to be its calibration (``Sandbox._calibrate``).
        self.calibrate = False
        #: An order for the slot's init to take before the next arm order (the pages its
        #: calibration run reported: ``wire.PREFAULT``).
        self.first_order: bytes | None = None
        #: Whether the slot's init does its work between runs at idle priority (launcher.c's
        #: ``assay_background_idle``; known once the slot is ready), and its host pid then.
        self.background_idle = False
        self.init_pid: int | None = None

    def wait_ready(self, timeout: float) -> bool:
        if self.pidfd is not None:
            return True
        ready = readable(self.sock, timeout)
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
            self.error = str((msg or {}).get("message", "sandbox init exited"))
            return False
        self.pidfd = fds[0]
        self.background_idle = bool(msg.get("background_idle"))
        if self.background_idle:
            self.init_pid = _pid_of(self.pidfd)
        return True

    def wait_armed(self, timeout: float) -> bool:
        """Receive the armed program process's request socket from the slot's init, then its
        own "armed"; the request then goes to it directly."""
        if not self.background_idle:
            return self._take_armed(timeout)
        end = time.monotonic() + timeout
        while not self._take_armed(None):
            if self.error:
                return False
            # A caller waits: the slot's arming is no longer background work. Again every
            # 50 ms: the init goes to idle priority after its record, which a first boost
            # can come before (the supervisor can run between its send and that call).
            self.boost()
            left = end - time.monotonic()
            if left <= 0:
                self.error = "timed out"
                return False
            readable(self.sock if self.req_sock is None else self.req_sock, min(0.05, left))
        return True

    def boost(self) -> None:
        """Back to normal priority: the slot's init and every process of the armed run's
        cgroup (the program process arming itself), which may be at idle priority doing
        the slot's work between runs (launcher.c's ``assay_background_idle``)."""
        # By host id, as the kernel has no pidfd form of sched_setscheduler. The init's id was
        # read when the slot became ready: it is its own only while the init lives, which
        # its pidfd tells (an id that ended could be reused). The cgroup's ids are read just
        # before: one that ends in between would need the pid space to wrap to be reused.
        pids = []
        if self.init_pid is not None and self.pidfd is not None and not readable(self.pidfd, 0):
            pids.append(self.init_pid)
        if self.cg is not None:
            with contextlib.suppress(OSError, ValueError):
                pids += self.cg.thread_ids()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(pid, os.SCHED_OTHER, _NORMAL)

    def _take_armed(self, timeout: float | None) -> bool:
        """``timeout`` None: only what has arrived (False if something is missing)."""
        if self.error:
            return False
        if self.req_sock is None:
            data, fds = self._recv_raw(self.sock, timeout)
            if not data and timeout is None and not self.error:
                return False
            if data != wire.ARMED or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                self.error = self.error or _message(data, "sandbox init exited")
                return False
            # Its kind given: no getsockname and getsockopt calls to learn it.
            self.req_sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fds[0])
        if not self.prog_armed:
            data, extra = self._recv_raw(self.req_sock, timeout)
            for fd in extra:
                os.close(fd)
            if not data and timeout is None and not self.error:
                return False
            if data != wire.ARMED:
                self.error = self.error or _message(data, "program process died while arming")
                return False
            self.prog_armed = True
        return True

    def _recv_raw(self, sock: socket.socket, timeout: float | None) -> tuple[bytes, list[int]]:
        """One raw message; most are already waiting, so try before polling. With ``timeout``
        None, ``b""`` and no error when nothing has arrived yet."""
        for attempt in range(2):
            try:
                data, fds = wire.recv_raw(sock, wire.DONTWAIT)
                if not data:
                    self.error = self.error or "the sandbox process exited"
                return data, fds
            except BlockingIOError:
                if timeout is None:
                    return b"", []
                if attempt:
                    return self._timed_out()
            except OSError as exc:
                self.error = str(exc)
                return b"", []
            ready = readable(sock, timeout)
            if not ready:
                break
        return self._timed_out()

    def _timed_out(self) -> tuple[bytes, list[int]]:
        self.error = "timed out"
        return b"", []

    def resize(self, disk_mb: int, timeout: float) -> bool:
        """Ask the slot's init to resize the armed run's tmpfs (a non-default ``disk_mb``)."""
        wire.send(self.sock, {"op": "resize", "disk_mb": disk_mb})
        msg, fds = self._recv(self.sock, timeout)
        for fd in fds:
            os.close(fd)
        if msg is None or msg.get("kind") != "resized":
            self.error = str((msg or {}).get("message", "resize failed"))
            return False
        return True

    def _recv(
        self, sock: socket.socket, timeout: float
    ) -> tuple[dict[str, object] | None, list[int]]:
        ready = readable(sock, timeout)
        if not ready:
            self.error = "timed out"
            return None, []
        try:
            return wire.recv(sock)
        except (OSError, ValueError) as exc:
            self.error = str(exc)
            return None, []

    def end_run(self) -> None:
        if self.req_sock is not None:
            self.req_sock.close()
            self.req_sock = None
        self.prog_armed = False

    def arm(self, cg: RunCgroup | None, idle: bool = False) -> None:
        """Have the slot fork its next program process into ``cg`` (asynchronously);
        ``idle``: the slot's init may do its work after that run at idle priority."""
        fds = cg.procs_fds() if cg is not None else []
        if self.first_order is not None:
            order, self.first_order = self.first_order, None
            wire.send_raw(self.sock, order)
        wire.send_raw(self.sock, wire.ARM[self.launcher, self.net, idle], fds)
        self.cg = cg

    @property
    def kind(self) -> tuple[bool, bool]:
        """Which idle pool the slot goes back to: (launcher, net)."""
        return self.launcher, self.net

    def kill_run(self) -> None:
        wire.send_raw(self.sock, wire.KILL)

    def kill_slot(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def close(self) -> None:
        self.end_run()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        self.sock.close()


#: sched_setscheduler's parameter for SCHED_OTHER (made once).
_NORMAL = os.sched_param(0)


def _pid_of(pidfd: int) -> int | None:
    """The host pid a pidfd refers to (None if the kernel does not say)."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as fh:
            for line in fh:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError):
        pass
    return None


def _message(data: bytes, default: str) -> str:
    """The ``message`` of a JSON error record, else ``default``."""
    try:
        msg = json.loads(data) if data else {}
    except ValueError:
        return default
    return str(msg.get("message", default)) if isinstance(msg, dict) else default


class CgroupPool:
    """Cgroups made ahead of need, checked for reuse, and removed, on a background thread.

    Creating and removing a memory cgroup costs the kernel real work; doing it here keeps
    it off every run's critical path, and reusing cgroups whose runs ended cleanly
    (``RunCgroup.recyclable``) saves most of it.
    """

    BATCH = 8

    def __init__(self, backend: CgroupBackend, limits: CgroupLimits, spare: int) -> None:
        self.backend = backend
        self.limits = limits
        self.spare = spare
        #: Ready cgroups the thread fills the pool up to, and keeps at most (used ones past
        #: it are removed). Woken only when fewer than ``spare`` are ready, it then finds a
        #: batch of ~BATCH used ones to check: one wake-up per ~BATCH runs, not one per run
        #: (each, a thread switch each way, cost ~45 us of trusted CPU on this machine).
        self.keep = spare + self.BATCH
        self._ready: collections.deque[RunCgroup] = collections.deque()
        self._dispose: collections.deque[RunCgroup] = collections.deque()
        self._recycle: collections.deque[RunCgroup] = collections.deque()
        self._cv = threading.Condition()
        self._closed = False
        self._stuck: list[RunCgroup] = []  # busy at removal; retried
        self._busy = True  # the thread is between two waits (making, checking, removing)
        self._thread = threading.Thread(target=self._work, daemon=True, name="assay-cgroups")
        self._thread.start()

    def note_limits(self, limits: CgroupLimits) -> None:
        """The limits a run just used: cgroups made from now on are prepared with them, so
        a steady stream of alike runs never rewrites limits on its critical path."""
        self.limits = limits

    def get(self) -> RunCgroup:
        with self._cv:
            cg = self._ready.popleft() if self._ready else None
            self._wake_if_low()
        return cg if cg is not None else self.backend.create(self.limits)

    def dispose(self, cg: RunCgroup) -> None:
        self.release(cg, reuse=False)

    def release(self, cg: RunCgroup, reuse: bool) -> None:
        """A run is over: check ``cg`` for another run if ``reuse``, else remove it.

        Used cgroups are checked in batches: the thread is woken when the ready ones run
        low, not once per run (two thread wake-ups per run cost more trusted CPU than the
        checks themselves). A cgroup to remove wakes it at once."""
        with self._cv:
            if reuse:
                self._recycle.append(cg)
                self._wake_if_low()
            else:
                self._dispose.append(cg)
                self._cv.notify()

    def _wake_if_low(self) -> None:
        """(Under ``_cv``.) Wake the thread if fewer than ``spare`` cgroups are ready."""
        if len(self._ready) < self.spare:
            self._cv.notify()

    def _work(self) -> None:
        retry: list[RunCgroup] = []
        while True:
            with self._cv:
                while (
                    not self._closed
                    and not self._dispose
                    and not self._recycle
                    and len(self._ready) >= self.spare
                    and not retry
                ):
                    self._busy = False
                    self._cv.wait(1.0)
                self._busy = True
                if self._closed:
                    return
                todo = list(self._dispose)
                self._dispose.clear()
                used = list(self._recycle)
                self._recycle.clear()
            for cg in used:
                if self._reusable(cg):
                    with self._cv:
                        if len(self._ready) < self.keep:
                            self._ready.append(cg)
                            continue
                todo.append(cg)
            with self._cv:
                need = self.keep - len(self._ready)
            retry = [cg for cg in retry + todo if not _remove(cg)]
            self._stuck = list(retry)
            for _ in range(max(0, need)):
                try:
                    cg = self.backend.create(self.limits)
                except OSError:
                    break
                with self._cv:
                    self._ready.append(cg)
            if retry:
                with self._cv:
                    self._cv.wait(0.05)

    def settled(self) -> bool:
        """Whether the thread waits with nothing to do: no cgroup half made, checked or
        removed (each holds descriptors while it is; for tests and diagnostics)."""
        with self._cv:
            return not self._busy and not self._dispose and not self._recycle

    @staticmethod
    def _reusable(cg: RunCgroup) -> bool:
        try:
            return cg.recyclable(defaults.CGROUP_REUSE_MAX_BYTES)
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(timeout=5)
        leftovers = list(self._ready) + list(self._dispose) + list(self._recycle) + self._stuck
        self._ready.clear()
        self._dispose.clear()
        self._recycle.clear()
        for cg in leftovers:
            _remove(cg)


def _remove(cg: RunCgroup) -> bool:
    """Remove a cgroup, killing stragglers once if the kernel says it is busy."""
    if cg.destroy():
        return True
    cg.kill_all()
    return cg.destroy()
