"""A slot: one set of namespaces and its trusted init (S).

Process tree (see zygote.py)::

    zygote ── C1: made the namespaces; reaps S, outside the slot's PID namespace
                └── S = PID 1 of the slot (trusted init, root)
                      └── P: the run's program process (a fork of S, or the C launcher)

S forks a fresh program process per run and is PID 1 of the run's processes: it reaps them,
kills everything left when the program exits, reports the wait status, and resets the slot
(a new tmpfs, its Landlock ruleset). Every fork shares S's pages with the child, so every
page S writes afterwards faults (and is copied while the child lives); S's per-run steps
are therefore C (launcher.c's library: the loop over plain arm orders, the fork, the wait,
the reset) where the host could build it, and raw messages, no JSON, on the common path:
S comes back to Python only for other orders and for a run whose wait came back unfinished.

S never reads a run's data: files, stdin, argv and env go from the supervisor straight to
the program process in fds, because every later program is a fork of S.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import termios
from typing import TYPE_CHECKING, Any

from . import landlock, linux, program, rootfs, wire
from .arming import Arming

if TYPE_CHECKING:
    from collections.abc import Callable

    from .native import Native

RULESET_FD_MIN = 200
LAUNCH_FD_MIN = 300
#: Where the slot finds the exec-mode launcher (root-only, in the read-only template).
LAUNCHER = rootfs.LAUNCHER
LAUNCHER_CAPS = (linux.CAP_SYS_ADMIN, linux.CAP_SETUID, linux.CAP_SETGID)


# -- S: the slot's init -----------------------------------------------------------------------


class Slot:
    """S: PID 1 of a slot. Trusted; one run at a time; never touches a run's data.

    On an arm order S forks the program process (or spawns the launcher), which joins the
    run's cgroup (and a fresh IPC namespace without seccomp), drops every privilege and
    waits ("armed"); S hands the supervisor its request socket, so the run itself flows
    without S. When the program exits S kills anything left in the namespace, reports the
    wait status, and gives the slot a new tmpfs and the Landlock ruleset naming it.
    """

    def __init__(self, arming: Arming, status: socket.socket, net: bool = False) -> None:
        """``status``: the socket to the supervisor; ``net``: whether the slot's runs have
        loopback networking (all of them, or none)."""
        #: What this slot's program processes arm themselves with (its own uid and gid).
        self.arming = arming
        self.status = status
        self.net = net
        self._ruleset = -1  # the Landlock ruleset naming the tmpfs (the Python steps')
        self._plan: landlock.Plan = (b"", [])
        self._disk_mb = 0
        self.bpf = -1  # the seccomp program, for the launcher to load
        self.pending: tuple[bytes, list[int]] | None = None
        #: Runs with loopback networking arm with this (the filter that allows IP sockets).
        self.arming_net = arming.with_filter(arming.net_filter)
        self.bpf_net = -1
        #: Whether ``lo`` of the slot's network namespace is up (for loopback runs only).
        self.lo_up = False
        #: Whether the C steps run the slot's background work at idle priority (launcher.c's
        #: ``assay_background_idle``): this process is then at idle priority between a
        #: run's exit record and the next hand-over, when the run's arm order allowed it.
        self.background_idle = False

    def serve(self, cfg: dict[str, Any], max_runs: int) -> None:
        """Set the slot up (``cfg``: the fork server's configuration), then serve at most
        ``max_runs`` runs."""
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            linux.sethostname("sandbox")
            if cfg.get("launcher"):
                linux.keep_caps_across_exec(LAUNCHER_CAPS)
            # Empty bounding set, once: every program process inherits it, so no capability
            # can come back, even through an exec (this process keeps the ones it holds).
            for cap in range(self.arming.cap_last + 1):
                linux.libc.prctl(linux.PR_CAPBSET_DROP, cap, 0, 0, 0)
            rootfs.enter(cfg["root"])
            rootfs.slot_accounts(self.arming.uid, self.arming.gid)
            os.environ.clear()  # programs' usual env, so most runs need not touch os.environ
            os.environ.update(cfg["default_env"])
            self._prepare_reset(cfg)
            self._reset(drop=False)  # the first tmpfs
            if self.arming.native is not None and cfg.get("background_idle"):
                self.background_idle = self.arming.native.background_idle()
            if self.arming.filter is not None:
                self.bpf = os.memfd_create("seccomp", os.MFD_CLOEXEC)
                os.write(self.bpf, self.arming.filter.bpf)
            if self.arming_net.filter is not None:
                self.bpf_net = os.memfd_create("seccomp-net", os.MFD_CLOEXEC)
                os.write(self.bpf_net, self.arming_net.filter.bpf)
            pidfd = os.pidfd_open(os.getpid())
            wire.send(
                self.status, {"kind": "ready", "background_idle": self.background_idle}, [pidfd]
            )
            os.close(pidfd)
        except BaseException as exc:
            report_error(self.status, "slot setup", exc)
            os._exit(1)
        arms = {order: kind for kind, order in wire.ARM.items()}
        native = self.arming.native
        # Plain arm orders of a slot of Python program processes: C's loop (assay_serve).
        in_c = native is not None and native.can_fork
        runs = 0
        while runs < max_runs:
            if in_c and self.pending is None and self.lo_up == self.net:
                assert native is not None
                code, taken = self._serve_in_c(native, max_runs - runs)
                runs += taken
                if code != 1:
                    continue
            runs += 1
            while True:
                if self.pending is not None:
                    (data, fds), self.pending = self.pending, None
                else:
                    data, fds = wire.recv_raw(self.status)
                if not data:
                    os._exit(0)
                if data.startswith(wire.PREFAULT) and native is not None:
                    native.set_prefault(data[len(wire.PREFAULT) :])  # pages for every run next
                kind = arms.get(data)
                if kind is not None and kind[1] != self.net:  # its ruleset is of one kind
                    report_error(self.status, "arm", ValueError("arm order of the other kind"))
                    os._exit(1)
                if kind is not None:
                    break
                for fd in fds:  # a prefault order, or a late kill order for a run now over
                    os.close(fd)
            if kind[0]:
                in_c = False  # a slot of launcher processes: its orders are all Python's
            self._arm_and_wait(fds, *kind)
        os._exit(0)

    def _serve_in_c(self, native: Native, max_runs: int) -> tuple[int, int]:
        """Up to ``max_runs`` plain arm orders in C (native.py's ``serve``), and what it
        hands back: a run to go on with, or an order with more cgroups than C takes."""
        arming = self.arming_net if self.net else self.arming
        bpf = arming.filter.bpf if arming.filter is not None else None
        orders = (wire.ARM[False, self.net, False], wire.ARM[False, self.net, True])
        try:
            code, taken = native.serve(
                self.status.fileno(), (arming.uid, arming.gid), bpf, orders, max_runs
            )
        except BaseException as exc:
            report_error(self.status, "arm", exc)
            os._exit(1)
        if code == 0:  # the program process, armed, its request taken
            # C closed these fds: no object may close them again once the program reuses them.
            self.status.detach()
            program.start(arming, *program.program_head(native.spec(), arming.default_env_spec))
        if code == 2:
            fds, idle, _pid, _collect = native.served()
            self._arm_and_wait(fds, False, self.net, idle)
        elif code == 3:
            _fds, _idle, pid, collect_r = native.served()
            self._native_after_fork(native, pid, (-1, -1, []), -1, collect_r, native.first_result)
        return code, taken

    def _prepare_reset(self, cfg: dict[str, Any]) -> None:
        """What a reset makes: the tmpfs's places and the Landlock ruleset naming them, the
        judged runs' (no TCP bind or connect at all) or the loopback runs' (TCP left to the
        network namespace, which has only ``lo``), as the slot serves runs of one kind.
        Landlock rules attach to inodes and ignore the directories mounts cover, so the
        ruleset is rebuilt for each tmpfs."""
        a = self.arming
        self._plan = landlock.plan_ruleset(
            a.landlock_abi,
            read_paths=["/"],
            write_paths=[cfg["workdir"], "/tmp", "/dev/shm"],
            device_paths=["/dev"],  # read-only tmpfs: only devices writable
            net=self.net,
        )
        self._disk_mb = int(cfg["default_disk_mb"])
        if a.native is not None:  # one C call, and after a run in C (native.slot_run)
            options = rootfs.tmpfs_options(self._disk_mb)
            a.native.set_reset(rootfs.STAGE, options, rootfs.places(), (a.uid, a.gid), self._plan)

    def _reset(self, drop: bool) -> None:
        """A fresh tmpfs for /work, /tmp and /dev/shm and its ruleset (the last tmpfs
        detached first if ``drop``: its content is gone once no process holds it)."""
        if self.arming.native is not None:
            self.arming.native.reset(drop)
            return
        if drop:
            rootfs.drop_rw()
        rootfs.fresh_rw(self._disk_mb, self.arming.uid, self.arming.gid)
        fd = landlock.create_ruleset(self._plan)
        if self._ruleset >= 0:
            os.close(self._ruleset)
        self._ruleset = -1
        if fd >= 0:
            # Out of the way of the stdio and pipe fds the program process sets up.
            self._ruleset = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, RULESET_FD_MIN)
            os.close(fd)

    @property
    def ruleset(self) -> int:
        """The Landlock ruleset naming the slot's current tmpfs (-1: none)."""
        native = self.arming.native
        return native.ruleset if native is not None else self._ruleset

    def _arm_and_wait(self, cg_fds: list[int], launcher: bool, net: bool, idle: bool) -> None:
        try:
            if self.background_idle:  # (C's loop sets it for the orders it takes)
                self.arming.native.run_idle(idle)  # type: ignore[union-attr]
            if net != self.lo_up:
                # Loopback runs: 127.0.0.1 and ::1 of the slot's own network namespace, which
                # has no other interface (a slot serves runs of one kind: see SlotHandle.net).
                linux.set_link_up("lo", net)
                self.lo_up = net
            req_sup, req_prog = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            collect_r, collect_w = os.pipe()
            # Every run's program is PID 2, whatever earlier runs did: no pid-based drift or
            # channel between runs of a slot (its PID namespace is otherwise empty by now).
            fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY)
            os.write(fd, b"1")
            os.close(fd)
            native = self.arming.native
            if native is not None and len(cg_fds) > 16:
                if self.background_idle:  # the Python steps have no hand-over from idle
                    native.foreground()
                native = None  # more hierarchies than the C steps take: the Python steps
            first: Callable[[], int] | None = None  # the run's first wait, if already done
            if launcher:
                pid = self._spawn_launcher(cg_fds, req_prog, collect_w, net)
            elif native is not None and native.can_fork:
                pid = self._fork_program(
                    native, cg_fds, req_sup, req_prog, collect_r, collect_w, net
                )
                first = native.first_result  # the run is over, or an order waits
            else:
                pid = os.fork()
                if pid == 0:
                    self.status.close()
                    req_sup.close()
                    os.close(collect_r)
                    arming = self.arming_net if net else self.arming
                    program.run_program(arming, cg_fds, req_prog, collect_w, self.ruleset)
            if native is not None:
                # The same steps in C: nothing of this heap is written while the program
                # process shares its pages (each page written would be copied).
                ends = (req_prog.detach(), collect_w, cg_fds)
                sup = req_sup.detach()  # (-1 when _fork_program has detached them)
        except BaseException as exc:
            report_error(self.status, "arm", exc)
            os._exit(1)
        if native is not None:
            self._native_after_fork(native, pid, ends, sup, collect_r, first)
            return
        try:
            req_prog.close()
            os.close(collect_w)
            for fd in cg_fds:
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            # The request flows from the supervisor straight to the program process.
            wire.send_raw(self.status, wire.ARMED, [req_sup.fileno()])
            req_sup.close()
        except BaseException as exc:
            report_error(self.status, "arm", exc)
            os._exit(1)
        st, usage = self._wait_program(pid, pidfd)
        os.close(pidfd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # whatever the program left behind
        left = self._reap_all()
        cpu = usage.ru_utime + usage.ru_stime if usage else 0.0
        rss = usage.ru_maxrss * 1024 if usage else 0
        if os.WIFSIGNALED(st):
            how = f'"signal":{os.WTERMSIG(st)}'
        else:
            how = f'"exit_code":{os.WEXITSTATUS(st)}'
        record = f'{{"kind":"exit","cpu_s":{cpu:.6f},"maxrss_bytes":{rss},"left":{left},{how}}}'
        try:
            if _pending_bytes(collect_r):
                self._collect(collect_r, record)  # in a child: names stay out of this heap
            else:
                self.status.sendmsg([record.encode()])
            os.close(collect_r)
            self._reset(drop=True)
        except BaseException as exc:
            report_error(self.status, "slot reset", exc)
            os._exit(1)

    def _fork_program(
        self,
        native: Native,
        cg_fds: list[int],
        req_sup: socket.socket,
        req_prog: socket.socket,
        collect_r: int,
        collect_w: int,
        net: bool,
    ) -> int:
        """Fork the program process in C (native.py's ``fork_program``): it arms itself and
        takes its request before it comes back to Python, here, only to start the program;
        this process comes back once the run is over (or an order waits for it), having
        handed the request socket over and waited in C."""
        arming = self.arming_net if net else self.arming
        ruleset = self.ruleset
        bpf = arming.filter.bpf if arming.filter is not None else None
        # C closes both ends of the request socket (here after the hand-over, there
        # before it returns): detached now, before the fork shares this heap.
        ends = (self.status.fileno(), req_sup.detach(), collect_r)
        ids = (arming.uid, arming.gid, ruleset, bpf)
        pid = native.fork_program(ends, ids, cg_fds, req_prog.detach(), collect_w)
        if pid == 0:  # the program process, armed, its request taken
            # C closed these fds: no object may close them again once the program reuses them.
            self.status.detach()
            program.start(arming, *program.program_head(native.spec(), arming.default_env_spec))
        return pid

    def _native_after_fork(
        self,
        native: Native,
        pid: int,
        ends: tuple[int, int, list[int]],
        sup: int,
        collect_r: int,
        first: Callable[[], int] | None,
    ) -> None:
        """Hand the program process over, wait for it, end the run and reset the slot, in C
        (native.py's ``slot_run``; ``first``: the result of that first wait when the fork
        call did it); orders other than a kill come back here between waits."""
        status = self.status.fileno()
        try:
            res = (
                first() if first is not None else native.slot_run(status, pid, ends, sup, collect_r)
            )
            while res == 1:
                self._order()
                res = native.slot_run(status, pid, ends, sup, collect_r)
            if res == 3:
                self._collect(collect_r, native.record.value.decode())
                os.close(collect_r)
                self._reset(drop=True)
        except BaseException as exc:
            report_error(self.status, "slot run", exc)
            os._exit(1)

    def _spawn_launcher(
        self, cg_fds: list[int], req_prog: socket.socket, collect_w: int, net: bool
    ) -> int:
        """Spawn the C launcher (launcher.c) as the run's program process.

        posix_spawn shares this process's memory until the exec instead of copying its page
        tables, and the launcher's own later exec leaves nothing of this heap behind. Every
        fd it needs is parked high, then placed at the numbers it expects (3, 4, 5, ...).
        """
        sources = [req_prog.fileno(), collect_w, *cg_fds]
        ruleset_at = bpf_at = -1
        ruleset = self.ruleset
        if ruleset >= 0:
            ruleset_at = 3 + len(sources)
            sources.append(ruleset)
        bpf = self.bpf_net if net else self.bpf
        if bpf >= 0:
            bpf_at = 3 + len(sources)
            sources.append(bpf)
        parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, LAUNCH_FD_MIN) for fd in sources]
        try:
            a = self.arming
            argv = [
                LAUNCHER,
                a.workdir,
                str(a.uid),
                str(a.gid),
                "1" if a.userns else "0",
                str(len(cg_fds)),
                str(ruleset_at),
                str(bpf_at),
            ]
            actions = [(os.POSIX_SPAWN_DUP2, fd, 3 + i) for i, fd in enumerate(parked)]
            return os.posix_spawn(LAUNCHER, argv, {}, file_actions=actions)
        finally:
            for fd in parked:
                os.close(fd)

    def _collect(self, collect_r: int, record: str) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                wanted = json.loads(wire.read_all(collect_r))
                fd = rootfs.collect_files(
                    wanted["paths"], self.arming.workdir, int(wanted["max_bytes"])
                )
                wire.send_raw(self.status, record.encode(), [fd])
            except BaseException as exc:
                report_error(self.status, "collect", exc)
            os._exit(0)
        os.waitpid(pid, 0)

    def _reap_all(self) -> int:
        """Reap every process left in the namespace; returns how many there were."""
        n = 0
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return n
            n += 1

    def _wait_program(self, child: int, pidfd: int) -> tuple[int, Any]:
        """Wait for the program process, reaping orphans as an init must, obeying orders.

        Every child's exit wakes S (SIGCHLD through a wakeup pipe), not only the program's:
        a background process whose parent is gone is reparented to S, and a long run (an
        agent session) whose orphans were left as zombies would run out of PIDs. The handler
        exists only while S waits, after the program process was forked, so no program
        inherits it.
        """
        status = self.status.fileno()
        wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        previous = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _on_child)
        poller = select.poll()  # not select: no limit on the descriptors' numbers
        for fd in (status, pidfd, wake_r):
            poller.register(fd, select.POLLIN)
        try:
            while True:
                ready = {fd for fd, _ in poller.poll()}
                if wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                if status in ready:
                    self._order()
                while True:
                    try:
                        pid, st, usage = os.wait4(-1, os.WNOHANG)
                    except ChildProcessError:
                        return 0, None
                    if pid == 0:
                        break
                    if pid == child:
                        return st, usage
        finally:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.set_wakeup_fd(previous)
            os.close(wake_r)
            os.close(wake_w)

    def _order(self) -> None:
        data, extra = wire.recv_raw(self.status)
        if not data:  # supervisor gone: take everything down
            os.kill(-1, signal.SIGKILL)
            os._exit(0)
        if data == wire.KILL:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        elif data.startswith(b'{"op":"resize"'):
            try:
                rootfs.resize_rw(int(json.loads(data)["disk_mb"]))
                wire.send(self.status, {"kind": "resized"})
            except BaseException as exc:
                wire.send(self.status, {"kind": "error", "stage": "resize", "message": str(exc)})
        elif self.pending is None:
            self.pending = (data, extra)  # the next arm order, sent as this run ended
            return
        for fd in extra:
            os.close(fd)


def _on_child(_signum: int, _frame: object) -> None:
    """SIGCHLD's handler in S: the wakeup pipe does the work (see ``_wait_program``)."""


def _pending_bytes(fd: int) -> int:
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf, True)
    return buf[0]


def report_error(status: socket.socket, stage: str, exc: BaseException) -> None:
    try:
        wire.send(
            status, {"kind": "error", "stage": stage, "message": f"{type(exc).__name__}: {exc}"}
        )
    except OSError:
        pass
