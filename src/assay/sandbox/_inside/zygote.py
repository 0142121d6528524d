"""The fork server: a warm interpreter from which every sandbox and every program is forked.

Process tree::

    zygote ── C1 (unshares namespaces, waits) ── S = PID 1 of a slot (trusted init, root)
                                                   └── P (one per run: joins the run's
                                                        cgroup and a new IPC namespace,
                                                        drops every privilege, runs the
                                                        program as PID 2)

A *slot* is a set of namespaces (PID, mount, network, UTS) over the read-only template root,
used by one run at a time. Its init ``S`` forks a fresh program process per run; after each
run it kills every process in the namespace, resets the PID counter, detaches the run's tmpfs
and mounts a new one, so nothing of a run outlives it. ``S`` never reads a run's data: files,
stdin, argv and env go from the supervisor straight to the program process in fds, because
every later program is a fork of ``S``. Each link dies with its parent (PR_SET_PDEATHSIG),
so killing the supervisor tears everything down.
"""

from __future__ import annotations

import array
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
import termios
import traceback
from typing import Any

# Everything is imported now: after pivot_root the host's files are out of reach.
from . import landlock, linux, pyrun, rootfs, seccomp, wire

# fds of a slot request: [status socket]. fds of an arm request: one cgroup.procs fd per
# hierarchy. fds of a run request, sent by the supervisor straight to the armed program
# process: stdout, stderr, files archive, stdin, spec (JSON), then the caller's extra fds.
R_STDOUT, R_STDERR, R_FILES, R_STDIN, R_SPEC = range(5)
CAP_LAST = 63
RULESET_FD_MIN = 200
LAUNCH_FD_MIN = 300
HIGH_FD = 1000
#: Where the slot finds the exec-mode launcher (root-only, in the read-only template).
LAUNCHER = rootfs.LAUNCHER
LAUNCHER_CAPS = (linux.CAP_SYS_ADMIN, linux.CAP_SETUID, linux.CAP_SETGID)


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
        launcher = None
        if cfg.get("launcher"):
            with open(cfg["launcher"], "rb") as fh:
                launcher = fh.read()
        rootfs.build_template(
            cfg["root"], cfg["ro_binds"], cfg["etc_binds"], cfg["userns"], launcher
        )
        info["launcher"] = launcher is not None
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
        pyrun.prebuild_streams()
        gc.collect()
        gc.freeze()  # keep forked children from dirtying the template's pages
        gc.disable()  # collections in forked children would touch (copy) shared pages
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
    """S: PID 1 of a slot. Trusted; one run at a time; never touches a run's data.

    Between runs S mounts the next run's tmpfs, builds its Landlock ruleset, resets the PID
    counter and forks the program process, which joins a fresh cgroup and IPC namespace,
    drops every privilege and waits ("armed"). S hands the supervisor the program process's
    request socket, so the run itself flows without S. When the program exits S kills
    anything left in the namespace, reports the wait status, and resets.
    """

    def __init__(self, zygote: Zygote, status: socket.socket, max_runs: int) -> None:
        self.z = zygote
        self.cfg = zygote.cfg
        self.status = status
        self.max_runs = max_runs
        self.ruleset = -1
        self.bpf = -1  # the seccomp program, for the launcher to load
        self.pending: tuple[dict[str, Any], list[int]] | None = None

    def serve(self) -> None:
        cfg = self.cfg
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            linux.sethostname("sandbox")
            if self.cfg.get("launcher"):
                self._pass_caps_to_launcher()
            # Empty bounding set, once: every program process inherits it, so no capability
            # can come back, even through an exec (this process keeps the ones it holds).
            for cap in range(self.z._cap_last + 1):
                linux.libc.prctl(linux.PR_CAPBSET_DROP, cap, 0, 0, 0)
            rootfs.enter(cfg["root"])
            os.environ.clear()  # programs' usual env, so most runs need not touch os.environ
            os.environ.update(cfg["default_env"])
            self._fresh(cfg["default_disk_mb"])
            if self.z.filter is not None:
                self.bpf = os.memfd_create("seccomp", os.MFD_CLOEXEC)
                os.write(self.bpf, self.z.filter.bpf)
            pidfd = os.pidfd_open(os.getpid())
            wire.send(self.status, {"kind": "ready"}, [pidfd])
            os.close(pidfd)
        except BaseException as exc:
            _report_error(self.status, "slot setup", exc)
            os._exit(1)
        for _ in range(self.max_runs):
            while True:
                req: dict[str, Any] | None
                if self.pending is not None:
                    (req, fds), self.pending = self.pending, None
                else:
                    req, fds = wire.recv(self.status)
                if req is None:
                    os._exit(0)
                if req.get("op") == "arm":
                    break
                for fd in fds:  # a late kill order for a run that is already over
                    os.close(fd)
            self._arm_and_wait(fds, bool(req.get("launcher")))
        os._exit(0)

    def _pass_caps_to_launcher(self) -> None:
        """Let the launcher, an exec of this process, keep what arming needs.

        Across an exec, root gets only its inheritable capabilities once the bounding set is
        empty, and a non-root user-namespace owner only its ambient ones; so those two sets
        get exactly the three the launcher uses (namespaces, uid and gid changes), before the
        bounding set is emptied. Python program processes and the launcher clear every set
        with capset (which clears the ambient set too) before any untrusted byte runs.
        """
        hdr = _CapHeader(0x20080522, 0)
        data = (_CapData * 2)()
        if linux.libc.capget(ctypes.byref(hdr), data) != 0:
            raise OSError(ctypes.get_errno(), "capget")
        for cap in LAUNCHER_CAPS:
            data[cap // 32].inheritable |= 1 << (cap % 32)
        if linux.libc.capset(ctypes.byref(hdr), data) != 0:
            raise OSError(ctypes.get_errno(), "capset (inheritable)")
        for cap in LAUNCHER_CAPS:
            if linux.libc.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_RAISE, cap, 0, 0):
                raise OSError(ctypes.get_errno(), "raise ambient capability")

    def _fresh(self, disk_mb: int) -> None:
        """A new writable tmpfs for the next run, and the Landlock ruleset naming it.

        Landlock rules attach to inodes and ignore the directories mounts cover, so the
        ruleset is rebuilt for each tmpfs (between runs, off the critical path).
        """
        rootfs.fresh_rw(disk_mb, self.cfg["uid"], self.cfg["gid"])
        abi = self.z.landlock_abi
        if abi:
            if self.ruleset >= 0:
                os.close(self.ruleset)
            fd = landlock.build_ruleset(
                abi,
                read_paths=["/"],
                write_paths=[self.cfg["workdir"], "/tmp", "/dev/shm"],
                device_paths=["/dev"],  # read-only tmpfs: only the device nodes are writable
            )
            # Out of the way of the stdio and pipe fds the program process sets up.
            self.ruleset = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, RULESET_FD_MIN)
            os.close(fd)

    def _arm_and_wait(self, cg_fds: list[int], launcher: bool) -> None:
        try:
            req_sup, req_prog = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            collect_r, collect_w = os.pipe()
            # Every run's program is PID 2, whatever earlier runs did: no pid-based drift or
            # channel between runs of a slot (its PID namespace is otherwise empty by now).
            with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
                fh.write("1")
            if launcher:
                pid = self._spawn_launcher(cg_fds, req_prog, collect_w)
            else:
                pid = os.fork()
                if pid == 0:
                    self.status.close()
                    req_sup.close()
                    os.close(collect_r)
                    _program(self.z, cg_fds, req_prog, collect_w, self.ruleset)
            req_prog.close()
            os.close(collect_w)
            for fd in cg_fds:
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            # The request flows from the supervisor straight to the program process.
            wire.send(self.status, {"kind": "armed"}, [req_sup.fileno()])
            req_sup.close()
        except BaseException as exc:
            _report_error(self.status, "arm", exc)
            os._exit(1)
        st, usage = self._wait_program(pid, pidfd)
        os.close(pidfd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # whatever the program left behind
        self._reap_all()
        record: dict[str, Any] = {
            "kind": "exit",
            "cpu_s": usage.ru_utime + usage.ru_stime if usage else 0.0,
            "maxrss_bytes": usage.ru_maxrss * 1024 if usage else 0,
        }
        if os.WIFSIGNALED(st):
            record["signal"] = os.WTERMSIG(st)
        else:
            record["exit_code"] = os.WEXITSTATUS(st)
        try:
            if _pending_bytes(collect_r):
                self._collect(collect_r, record)  # in a child: names stay out of this heap
            else:
                wire.send(self.status, record)
            os.close(collect_r)
            rootfs.drop_rw()
            self._fresh(self.cfg["default_disk_mb"])
        except BaseException as exc:
            _report_error(self.status, "slot reset", exc)
            os._exit(1)

    def _spawn_launcher(self, cg_fds: list[int], req_prog: socket.socket, collect_w: int) -> int:
        """Spawn the C launcher (launcher.c) as the run's program process.

        posix_spawn shares this process's memory until the exec instead of copying its page
        tables, and the launcher's own later exec leaves nothing of this heap behind. Every
        fd it needs is parked high, then placed at the numbers it expects (3, 4, 5, ...).
        """
        sources = [req_prog.fileno(), collect_w, *cg_fds]
        ruleset_at = bpf_at = -1
        if self.ruleset >= 0:
            ruleset_at = 3 + len(sources)
            sources.append(self.ruleset)
        if self.bpf >= 0:
            bpf_at = 3 + len(sources)
            sources.append(self.bpf)
        parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, LAUNCH_FD_MIN) for fd in sources]
        try:
            cfg = self.cfg
            argv = [
                LAUNCHER,
                cfg["workdir"],
                str(cfg["uid"]),
                str(cfg["gid"]),
                "1" if cfg["userns"] else "0",
                str(len(cg_fds)),
                str(ruleset_at),
                str(bpf_at),
            ]
            actions = [(os.POSIX_SPAWN_DUP2, fd, 3 + i) for i, fd in enumerate(parked)]
            return os.posix_spawn(LAUNCHER, argv, {}, file_actions=actions)
        finally:
            for fd in parked:
                os.close(fd)

    def _collect(self, collect_r: int, record: dict[str, Any]) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                wanted = json.loads(_read_all(collect_r))
                fd = rootfs.collect_files(
                    wanted["paths"], self.cfg["workdir"], int(wanted["max_bytes"])
                )
                wire.send(self.status, record, [fd])
            except BaseException as exc:
                _report_error(self.status, "collect", exc)
            os._exit(0)
        os.waitpid(pid, 0)

    def _reap_all(self) -> None:
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return

    def _wait_program(self, child: int, pidfd: int) -> tuple[int, Any]:
        """Wait for the program process, reaping orphans as an init must, obeying orders."""
        while True:
            ready, _, _ = select.select([self.status.fileno(), pidfd], [], [])
            if self.status.fileno() in ready:
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

    def _order(self) -> None:
        msg, extra = wire.recv(self.status)
        if msg is None:  # supervisor gone: take everything down
            os.kill(-1, signal.SIGKILL)
            os._exit(0)
        op = msg.get("op")
        if op == "kill":
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
        elif op == "resize":
            try:
                rootfs.resize_rw(int(msg["disk_mb"]))
                wire.send(self.status, {"kind": "resized"})
            except BaseException as exc:
                wire.send(self.status, {"kind": "error", "stage": "resize", "message": str(exc)})
        elif self.pending is None:
            self.pending = (msg, extra)  # the next arm order, sent as this run ended
            return
        for fd in extra:
            os.close(fd)


def _program(
    z: Zygote, cg_fds: list[int], req: socket.socket, collect_w: int, ruleset: int
) -> None:
    """The program process, in two steps.

    Armed (before any request exists): join the run's cgroup and a new IPC namespace, drop
    every privilege, load Landlock and seccomp, report "armed" to the supervisor. Run: take
    the request straight from the supervisor, write the input files (as the sandbox user),
    take stdio, rlimits, env and argv, report "running", and close every channel, so nothing
    the program does can be mistaken for, or forge, a message from the trusted side.
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
        wire.send(req, {"kind": "armed"})
        go, fds = wire.recv(req)
        if go is None:
            os._exit(0)
        spec = json.loads(_read_all(fds[R_SPEC]))
        rootfs.write_files(fds[R_FILES], cfg["workdir"], uid, gid)
        if spec.get("collect"):
            payload = json.dumps({"paths": spec["collect"], "max_bytes": spec["collect_max_bytes"]})
            os.write(collect_w, payload.encode())
        os.close(collect_w)
        stdio = [fds[R_STDIN], fds[R_STDOUT], fds[R_STDERR], *fds[R_SPEC + 1 :]]
        # stdin, stdout, stderr, then the caller's extra fds as 3, 4, ... Received fds sit at
        # low numbers, so park every one (and the request socket) high before placing them.
        keep = fcntl.fcntl(req.fileno(), fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
        parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD) for fd in stdio]
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for target, fd in enumerate(parked):
            os.dup2(fd, target)  # dup2 clears close-on-exec on the target
        req.close()
        req = socket.socket(fileno=keep)
        os.closerange(len(parked), keep)
        os.closerange(keep + 1, 65536)
        _set_rlimits(spec["rlimits"])
        env = spec["env"]
        # The slot's init set os.environ to default_env; comparing plain dicts costs ~10 us,
        # comparing against os.environ (an encoding mapping) ~0.2 ms of copy-on-write faults.
        if spec["mode"] == "python" and env != cfg["default_env"]:
            os.environ.clear()
            os.environ.update(env)
    except BaseException:
        with contextlib.suppress(OSError):
            wire.send(req, {"kind": "error", "message": traceback.format_exc()[-4000:]})
        os._exit(126)
    wire.send(req, {"kind": "running"})
    req.close()
    gc.enable()  # programs get the interpreter they expect
    argv = spec["argv"]
    if spec["mode"] == "python":
        pyrun.run(argv[0], argv, z.base_path)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        _stderr_line(f"assay sandbox: cannot execute {argv[0]}: {exc.strerror}")
        os._exit(127)


def _pending_bytes(fd: int) -> int:
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf, True)
    return buf[0]


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
