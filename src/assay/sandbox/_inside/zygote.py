"""The fork server: a warm interpreter from which every sandbox and every program is forked.

Process tree::

    zygote ── C1 (unshares namespaces, waits) ── S = PID 1 of a slot (trusted init, root)
                                                   └── X (one per run: joins the run's
                                                        cgroup and a new IPC namespace,
                                                        drops every privilege, runs the
                                                        program)

A *slot* is a set of namespaces (PID, mount, network, UTS) over the read-only template root,
created once and used by one run at a time. Its init ``S`` forks a fresh program process per
run, and after each run kills every process in the namespace, detaches the run's tmpfs and
mounts a new one, so nothing of a run outlives it; each run also gets a new cgroup and a new
IPC namespace. ``S`` never reads a run's data into its own memory (files and stdin travel in
memfds that only ``X`` reads), because every later program is a fork of ``S``. Each link dies
with its parent (PR_SET_PDEATHSIG), so killing the supervisor tears everything down.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import json
import os
import resource
import select
import signal
import socket
import sys
import traceback
from typing import Any

# Everything is imported now: after pivot_root the host's files are out of reach.
from . import landlock, linux, pyrun, rootfs, seccomp, wire

# fds of a slot request: [status socket]. fds of an arm request: one cgroup.procs fd per
# hierarchy. fds of a run request, sent by the supervisor to the slot's init, which passes
# them unread to the run's init: stdout, stderr, files archive, stdin, spec (JSON).
R_STDOUT, R_STDERR, R_FILES, R_STDIN, R_SPEC = range(5)
CAP_LAST = 63
RULESET_FD_MIN = 200
HIGH_FD = 1000


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _cap_last() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return CAP_LAST


class Zygote:
    def __init__(self, cfg: dict[str, Any], ctl: socket.socket) -> None:
        self.cfg = cfg
        self.ctl = ctl
        self.pid = os.getpid()
        self.children: dict[str, int] = {}
        self.filter: seccomp.Filter | None = None
        self.landlock_abi = 0
        self._cap_hdr = _CapHeader(0x20080522, 0)
        self._cap_data = (_CapData * 2)()
        self._cap_last = _cap_last()
        self.base_path = [p for p in sys.path if p and p != cfg["inside_dir"]]

    # -- start-up ---------------------------------------------------------------------------
    def prepare(self) -> dict[str, Any]:
        cfg = self.cfg
        info: dict[str, Any] = {"pid": self.pid, "python": sys.version.split()[0]}
        if cfg["userns"]:
            uid, gid = os.getuid(), os.getgid()
            linux.unshare(linux.CLONE_NEWUSER)
            with open("/proc/self/setgroups", "w") as fh:
                fh.write("deny")
            with open("/proc/self/uid_map", "w") as fh:
                fh.write(f"{cfg['uid']} {uid} 1\n")
            with open("/proc/self/gid_map", "w") as fh:
                fh.write(f"{cfg['gid']} {gid} 1\n")
        linux.unshare(linux.CLONE_NEWNS)
        rootfs.build_template(cfg["root"], cfg["ro_binds"], cfg["etc_binds"], cfg["userns"])
        if cfg["seccomp"]:
            self.filter = seccomp.build()
            info["seccomp_instructions"] = self.filter.instructions
        if cfg["landlock"]:
            self.landlock_abi = landlock.abi_version()
        info["landlock_abi"] = self.landlock_abi
        for name in cfg["preimport"]:
            try:
                __import__(name)
            except Exception:
                pass
        gc.collect()
        gc.freeze()  # keep forked children from dirtying the template's pages
        return info

    # -- main loop --------------------------------------------------------------------------
    def serve(self) -> None:
        while True:
            ready, _, _ = select.select([self.ctl], [], [], 0.5)
            self._reap()
            if not ready:
                continue
            try:
                msg, fds = wire.recv(self.ctl)
            except (ValueError, OSError):
                continue
            if msg is None:
                return
            if msg.get("op") != "slot":
                for fd in fds:
                    os.close(fd)
                continue
            pid = os.fork()
            if pid == 0:
                try:
                    self._c1(msg, fds)
                finally:
                    os._exit(1)
            self.children[msg["id"]] = pid
            for fd in fds:
                os.close(fd)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for key, value in list(self.children.items()):
                if value == pid:
                    del self.children[key]

    # -- C1: namespaces ---------------------------------------------------------------------
    def _c1(self, prep: dict[str, Any], fds: list[int]) -> None:
        status = socket.socket(fileno=fds[0])
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.pid:
                os._exit(1)
            self.ctl.close()
            linux.unshare(
                linux.CLONE_NEWNS
                | linux.CLONE_NEWPID
                | linux.CLONE_NEWNET
                | linux.CLONE_NEWIPC
                | linux.CLONE_NEWUTS
            )
            pid = os.fork()
            if pid == 0:
                Slot(self, status, int(prep["max_runs"])).serve()
                os._exit(0)
            status.close()
            os.waitpid(pid, 0)
            os._exit(0)
        except BaseException as exc:
            _report_error(status, "namespaces", exc)
            os._exit(1)


class Slot:
    """S: PID 1 of a slot. Trusted; one program at a time, cleaned up after each.

    Between runs S mounts the next run's tmpfs, builds its Landlock ruleset and forks the
    next program process X, which joins the cgroup the supervisor sent and drops every
    privilege ("armed"), then waits. A run then only costs writing its files and handing X
    its stdio: no fork, mount or privilege change is on the critical path.
    """

    def __init__(self, zygote: Zygote, status: socket.socket, max_runs: int) -> None:
        self.z = zygote
        self.cfg = zygote.cfg
        self.status = status
        self.max_runs = max_runs
        self.disk_mb = 0
        self.ruleset = -1
        self.armed: tuple[int, socket.socket] | None = None  # (run init pid, its socket)
        self.pidns_fd = -1

    def serve(self) -> None:
        cfg = self.cfg
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            linux.sethostname("sandbox")
            rootfs.enter(cfg["root"])
            os.environ.clear()  # programs' usual env, so most runs need not touch os.environ
            os.environ.update(cfg["default_env"])
            self._fresh(cfg["default_disk_mb"])
            pidfd = os.pidfd_open(os.getpid())
            wire.send(self.status, {"kind": "ready"}, [pidfd])
            os.close(pidfd)
        except BaseException as exc:
            _report_error(self.status, "slot setup", exc)
            os._exit(1)
        runs = 0
        while runs < self.max_runs:
            req, fds = wire.recv(self.status)
            if req is None:
                os._exit(0)
            op = req.get("op")
            if op == "arm":
                self._arm(fds)
            elif op == "run":
                self._run(req, fds)
                runs += 1
            else:
                for fd in fds:
                    os.close(fd)
        os._exit(0)

    def _fresh(self, disk_mb: int) -> None:
        """A new writable tmpfs for the next run, and the Landlock ruleset naming it.

        Landlock rules attach to inodes and ignore the directories mounts cover, so the
        ruleset is rebuilt for each tmpfs (between runs, off the critical path).
        """
        rootfs.fresh_rw(disk_mb, self.cfg["uid"], self.cfg["gid"])
        self.disk_mb = disk_mb
        abi = self.z.landlock_abi
        if abi:
            if self.ruleset >= 0:
                os.close(self.ruleset)
            fd = landlock.build_ruleset(
                abi,
                read_paths=["/"],
                write_paths=[self.cfg["workdir"], "/tmp", "/dev/shm"],
                device_paths=[f"/dev/{d}" for d in rootfs.DEVICES],
            )
            # Out of the way of the stdio and pipe fds the program process sets up.
            self.ruleset = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, RULESET_FD_MIN)
            os.close(fd)

    def _arm(self, cg_fds: list[int]) -> None:
        """Fork the next run's init X (PID 1 of a new PID namespace, with its own procfs),
        whose child arms itself as the program; returns once it is armed."""
        try:
            if self.armed is not None:  # re-arm: discard the previous one
                os.kill(self.armed[0], signal.SIGKILL)
                self.armed[1].close()
                self.armed = None
                self._reap_all()
            if self.pidns_fd < 0:
                self.pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            linux.setns(self.pidns_fd, linux.CLONE_NEWPID)  # undo the previous run's unshare
            linux.unshare(linux.CLONE_NEWPID)
            to_init, init_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pid = os.fork()
            if pid == 0:
                self.status.close()
                to_init.close()
                _run_init(self.z, cg_fds, init_end, self.ruleset)
            init_end.close()
            for fd in cg_fds:
                os.close(fd)
            msg, _ = wire.recv(to_init)
            if msg is None or msg.get("kind") != "armed":
                raise RuntimeError(
                    (msg or {}).get("message") or "program process died while arming"
                )
            self.armed = (pid, to_init)
        except BaseException as exc:
            _report_error(self.status, "arm", exc)
            os._exit(1)

    def _run(self, req: dict[str, Any], fds: list[int]) -> None:
        """Hand the run to the armed init. This process never reads a run's data (every
        later program is a fork of it): files, stdin and the run's spec stay in fds."""
        try:
            if self.armed is None:
                raise RuntimeError("run before arm")
            child, to_init = self.armed
            self.armed = None
            if int(req["disk_mb"]) != self.disk_mb:
                rootfs.resize_rw(int(req["disk_mb"]))
                self.disk_mb = int(req["disk_mb"])
            wire.send(to_init, {"kind": "go"}, fds)
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(child)
        except BaseException as exc:
            _report_error(self.status, "run setup", exc)
            os._exit(1)
        killed = self._supervise(child, pidfd)
        os.close(pidfd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # the run's namespace died with its init; belt and braces
        self._reap_all()
        record, out_fds = _last_message(to_init)
        if record is None:
            record = (
                {"kind": "exit", "signal": int(signal.SIGKILL)}
                if killed
                else {"kind": "error", "stage": "run", "message": "the run's init died"}
            )
        wire.send(self.status, record, out_fds)
        for fd in out_fds:
            os.close(fd)
        try:
            rootfs.drop_rw()
            self._fresh(self.cfg["default_disk_mb"])
        except BaseException as exc:
            _report_error(self.status, "slot reset", exc)
            os._exit(1)

    def _reap_all(self) -> None:
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return

    def _supervise(self, child: int, pidfd: int) -> bool:
        """Wait for the run's init, reaping as an init must; True if killed on order."""
        killed = False
        while True:
            ready, _, _ = select.select([self.status.fileno(), pidfd], [], [], 0.05)
            if self.status.fileno() in ready:
                msg, extra = wire.recv(self.status)
                for fd in extra:
                    os.close(fd)
                if msg is None:  # supervisor gone: take everything down
                    os.kill(-1, signal.SIGKILL)
                    os._exit(0)
                if msg.get("op") == "kill":
                    killed = True
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(-1, signal.SIGKILL)
            while True:
                try:
                    pid, _st = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    return killed
                if pid == 0:
                    break
                if pid == child:
                    return killed


def _run_init(z: Zygote, cg_fds: list[int], slot: socket.socket, ruleset: int) -> None:
    """X: PID 1 of one run's PID namespace (root, trusted, lives for this run only).

    Mounts the run's procfs, forks the program process and relays its "armed"; on "go"
    reads the run's spec, writes its files, hands the program its stdio; then reaps, kills
    whatever the program left, collects requested files and reports to the slot's init.
    Its exit ends the namespace.
    """
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        linux.unshare(linux.CLONE_NEWNS)
        linux.mount(
            "proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC, "hidepid=2"
        )
        orders, program_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        child = os.fork()
        if child == 0:
            slot.close()
            orders.close()
            _program(z, cg_fds, program_end, ruleset)
        program_end.close()
        for fd in cg_fds:
            os.close(fd)
        armed, _ = wire.recv(orders)
        wire.send(slot, armed or {"kind": "error", "message": "program process died while arming"})
        if armed is None or armed.get("kind") != "armed":
            os._exit(1)
        go, fds = wire.recv(slot)
        if go is None:
            os._exit(0)
        spec = json.loads(_read_all(fds[R_SPEC]))
        cfg = z.cfg
        rootfs.write_files(fds[R_FILES], cfg["workdir"], cfg["uid"], cfg["gid"])
        order = {k: spec[k] for k in ("mode", "argv", "env", "rlimits")}
        extra = fds[R_SPEC + 1 :]
        wire.send(
            orders, {"kind": "go", **order}, [fds[R_STDIN], fds[R_STDOUT], fds[R_STDERR], *extra]
        )
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        while True:
            pid, st, usage = os.wait4(-1, 0)
            if pid == child:
                break
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # leftovers, before their files are read
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        started, _ = _last_message(orders)
        out_fds: list[int] = []
        if started is None or started.get("kind") != "running":
            text = (started or {}).get("message") or "program process died during setup"
            record: dict[str, Any] = {
                "kind": "error",
                "stage": "program setup",
                "message": str(text)[-2000:],
            }
        else:
            record = {
                "kind": "exit",
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "maxrss_bytes": usage.ru_maxrss * 1024,
            }
            if os.WIFSIGNALED(st):
                record["signal"] = os.WTERMSIG(st)
            else:
                record["exit_code"] = os.WEXITSTATUS(st)
            if spec.get("collect"):
                out_fds.append(
                    rootfs.collect_files(
                        spec["collect"], cfg["workdir"], int(spec["collect_max_bytes"])
                    )
                )
        wire.send(slot, record, out_fds)
    except BaseException as exc:
        _report_error(slot, "run init", exc)
        os._exit(1)
    os._exit(0)


def _program(z: Zygote, cg_fds: list[int], orders: socket.socket, ruleset: int) -> None:
    """X: become the program, in two steps.

    Armed (before any request exists): join the run's cgroup and a new IPC namespace, drop
    every privilege, load Landlock and seccomp. Go (per run): take the run's stdio, rlimits,
    env and argv, report "running" and close the orders socket, so nothing the program does
    can be mistaken for, or forge, a message from the trusted side.
    """
    cfg = z.cfg
    try:
        for fd in cg_fds:
            os.write(fd, b"0")  # join the run's cgroups (one fd per hierarchy)
            os.close(fd)
        linux.unshare(linux.CLONE_NEWIPC)  # SysV IPC and POSIX queues of this run only
        os.setsid()
        os.chdir(cfg["workdir"])
        uid, gid = cfg["uid"], cfg["gid"]
        for cap in range(z._cap_last + 1):  # no capability can come back, even through exec
            linux.libc.prctl(linux.PR_CAPBSET_DROP, cap, 0, 0, 0)
        if not cfg["userns"]:
            os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if linux.libc.capset(ctypes.byref(z._cap_hdr), z._cap_data) != 0:  # userns keeps caps
            raise OSError(ctypes.get_errno(), "capset")
        linux.prctl(linux.PR_SET_DUMPABLE, 1)
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        if ruleset >= 0:
            landlock.restrict_self(ruleset)
        if z.filter is not None:
            z.filter.load()
        wire.send(orders, {"kind": "armed"})
        go, fds = wire.recv(orders)
        if go is None:
            os._exit(0)
        # stdin, stdout, stderr, then the caller's extra fds as 3, 4, ... Received fds sit at
        # low numbers, so park every one (and the orders socket) high before placing them.
        keep = fcntl.fcntl(orders.fileno(), fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
        parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD) for fd in fds]
        for fd in fds:
            os.close(fd)
        for target, fd in enumerate(parked):
            os.dup2(fd, target)  # dup2 clears close-on-exec on the target
        orders.close()
        orders = socket.socket(fileno=keep)
        os.closerange(len(parked), keep)
        os.closerange(keep + 1, 65536)
        _set_rlimits(go["rlimits"])
        env = go["env"]
        if go["mode"] == "python" and env != os.environ:
            os.environ.clear()
            os.environ.update(env)
    except BaseException:
        with contextlib.suppress(OSError):
            wire.send(orders, {"kind": "error", "message": traceback.format_exc()[-4000:]})
        os._exit(126)
    wire.send(orders, {"kind": "running"})
    orders.close()
    if go["mode"] == "python":
        pyrun.run(go["argv"][0], go["argv"], z.base_path)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    argv = go["argv"]
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        _stderr_line(f"assay sandbox: cannot execute {argv[0]}: {exc.strerror}")
        os._exit(127)


def _last_message(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The last message the peer queued before it exited, and its fds; closes ``sock``."""
    sock.setblocking(False)
    last: dict[str, Any] | None = None
    last_fds: list[int] = []
    try:
        while True:
            msg, fds = wire.recv(sock)
            if msg is None:
                break
            for fd in last_fds:
                os.close(fd)
            last, last_fds = msg, fds
    except (BlockingIOError, OSError, ValueError):
        pass
    finally:
        sock.close()
    return last, last_fds


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    return b"".join(chunks)


def _set_rlimits(lim: dict[str, Any]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"], lim["open_files"]))
    stack = lim["stack_bytes"]
    resource.setrlimit(resource.RLIMIT_STACK, (stack, stack))
    cpu = lim["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _stderr_line(text: str) -> None:
    try:
        os.write(2, (text.rstrip("\n") + "\n").encode())
    except OSError:
        pass


def _report_error(status: socket.socket, stage: str, exc: BaseException) -> None:
    try:
        wire.send(
            status, {"kind": "error", "stage": stage, "message": f"{type(exc).__name__}: {exc}"}
        )
    except OSError:
        pass


def main() -> None:
    ctl = socket.socket(fileno=int(sys.argv[1]))
    os.set_inheritable(ctl.fileno(), False)
    cfg, _ = wire.recv(ctl)
    if cfg is None:
        os._exit(1)
    zyg = Zygote(cfg, ctl)
    try:
        info = zyg.prepare()
    except BaseException as exc:
        wire.send(
            ctl,
            {
                "kind": "failed",
                "message": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc(),
            },
        )
        os._exit(1)
    wire.send(ctl, {"kind": "ready", **info})
    zyg.serve()
    os._exit(0)
