"""The fork server: a warm interpreter that forks one fully isolated child per run.

Process tree of one run::

    zygote ── C1 (unshares namespaces, waits) ── C2 = PID 1 of the run (trusted init)
                                                   └── C3 (joins the cgroup, drops every
                                                        privilege, runs the program)

C1 exists because a new PID namespace only applies to the children of the unsharing process.
C2 stays root and trusted: it writes the input files, reaps, and on C3's exit kills whatever
is left in the namespace, collects requested files and reports C3's exit status. Each link
dies with its parent (PR_SET_PDEATHSIG), so killing the supervisor tears everything down.
"""

from __future__ import annotations

import contextlib
import ctypes
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

# fds of a prepare request: [status socket, cgroup.procs fds...]
# fds of a run request (sent by the supervisor straight to the slot's init):
R_STDOUT, R_STDERR, R_FILES, R_STDIN = range(4)
CAP_LAST = 63


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_bounding_set() -> None:
    """No capability can ever come back, even through an exec (needs CAP_SETPCAP: call first)."""
    for cap in range(CAP_LAST + 1):
        if linux.libc.prctl(linux.PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break


def _clear_capabilities() -> None:
    """Empty every capability set; needed in a user namespace, where setuid keeps them."""
    hdr = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    if linux.libc.capset(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


class Zygote:
    def __init__(self, cfg: dict[str, Any], ctl: socket.socket) -> None:
        self.cfg = cfg
        self.ctl = ctl
        self.pid = os.getpid()
        self.children: dict[str, int] = {}
        self.filter: seccomp.Filter | None = None
        self.landlock_abi = 0
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
            op = msg.get("op")
            if op == "kill":
                pid = self.children.get(msg["id"])
                if pid:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                continue
            if op != "prepare":
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
        status = socket.socket(fileno=os.dup(fds[0]))
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
                self._c2(prep, fds, status)
            for fd in fds:
                os.close(fd)
            status.close()
            os.waitpid(pid, 0)
            os._exit(0)
        except BaseException as exc:
            _report_error(status, "namespaces", exc)
            os._exit(1)

    # -- C2: init of the run ----------------------------------------------------------------
    def _c2(self, prep: dict[str, Any], fds: list[int], status: socket.socket) -> None:
        """Trusted init: prepares the slot, then waits for the run request on ``status``."""
        cfg = self.cfg
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            linux.sethostname("sandbox")
            rootfs.enter(cfg["root"], int(prep["disk_mb"]), cfg["uid"], cfg["gid"])
            orders, orders_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            child = os.fork()
            if child == 0:
                status.close()
                orders.close()
                self._c3(fds[1:], orders_child)
            orders_child.close()
            for fd in fds:
                os.close(fd)
            armed, _ = wire.recv(orders)
            if armed is None or armed.get("kind") != "armed":
                raise RuntimeError(
                    (armed or {}).get("message", "program process died while arming")
                )
            pidfd = os.pidfd_open(os.getpid())
            wire.send(status, {"kind": "ready"}, [pidfd])
            os.close(pidfd)
            req, run_fds = wire.recv(status)
            if req is None:  # slot discarded
                os._exit(0)
            if int(req["disk_mb"]) != int(prep["disk_mb"]):
                linux.mount(
                    None,
                    cfg["workdir"],
                    None,
                    linux.MS_REMOUNT | linux.MS_NOSUID | linux.MS_NODEV,
                    f"size={int(req['disk_mb'])}m",
                )
            files = wire.unpack_files(run_fds[R_FILES])
            rootfs.write_files(files, cfg["workdir"], cfg["uid"], cfg["gid"])
            del files
            go = {k: req[k] for k in ("mode", "argv", "env", "rlimits")}
            wire.send(
                orders,
                {"kind": "go", **go},
                [run_fds[R_STDIN], run_fds[R_STDOUT], run_fds[R_STDERR]],
            )
            for fd in run_fds:
                os.close(fd)
        except BaseException as exc:
            _report_error(status, "setup", exc)
            os._exit(1)
        exit_status, usage = _wait_for(child)
        started, _ = _recv_nowait(orders)
        if started is None or started.get("kind") != "running":
            text = (started or {}).get("message") or "program process died during setup"
            wire.send(
                status, {"kind": "error", "stage": "program setup", "message": str(text)[-2000:]}
            )
            os._exit(1)
        try:
            os.kill(-1, signal.SIGKILL)  # whatever the program left behind in its namespace
        except ProcessLookupError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        record: dict[str, Any] = {
            "kind": "exit",
            "cpu_s": usage.ru_utime + usage.ru_stime if usage else 0.0,
            "maxrss_bytes": usage.ru_maxrss * 1024 if usage else 0,
        }
        if os.WIFSIGNALED(exit_status):
            record["signal"] = os.WTERMSIG(exit_status)
        else:
            record["exit_code"] = os.WEXITSTATUS(exit_status)
        out_fds: list[int] = []
        if req.get("collect"):
            collected = rootfs.collect_files(
                req["collect"], cfg["workdir"], int(req["collect_max_bytes"])
            )
            out_fds.append(wire.memfd_with(wire.pack_files(collected), "collected"))
        wire.send(status, record, out_fds)
        os._exit(0)

    # -- C3: the program --------------------------------------------------------------------
    def _c3(self, cg_fds: list[int], orders: socket.socket) -> None:
        """Become the program, in two steps.

        Armed (before any request exists): join the cgroup, drop every privilege, load
        Landlock and seccomp. Go (per run): take the run's stdio, rlimits, env and argv,
        report "running" and close the orders socket, so nothing the program does can be
        mistaken for, or forge, a message from the trusted side.
        """
        cfg = self.cfg
        try:
            for fd in cg_fds:
                os.write(fd, b"0")  # join the run's cgroups (one fd per hierarchy)
                os.close(fd)
            os.setsid()
            os.chdir(cfg["workdir"])
            uid, gid = cfg["uid"], cfg["gid"]
            _drop_bounding_set()
            if not cfg["userns"]:
                os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            _clear_capabilities()
            linux.prctl(linux.PR_SET_DUMPABLE, 1)
            if self.landlock_abi:
                landlock.restrict(
                    self.landlock_abi,
                    read_paths=["/"],
                    write_paths=[cfg["workdir"], "/tmp", "/dev/shm"],
                    device_paths=[f"/dev/{d}" for d in rootfs.DEVICES],
                )
            if self.filter is not None:
                self.filter.load()
            else:
                linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
            wire.send(orders, {"kind": "armed"})
            go, fds = wire.recv(orders)
            if go is None:
                os._exit(0)
            os.dup2(fds[0], 0)
            os.dup2(fds[1], 1)
            os.dup2(fds[2], 2)
            keep = orders.fileno()
            os.closerange(3, keep)
            os.closerange(keep + 1, 65536)
            _set_rlimits(go["rlimits"])
            env = go["env"]
            os.environ.clear()
            os.environ.update(env)
        except BaseException:
            with contextlib.suppress(OSError):
                wire.send(orders, {"kind": "error", "message": traceback.format_exc()[-4000:]})
            os._exit(126)
        wire.send(orders, {"kind": "running"})
        orders.close()
        if go["mode"] == "python":
            pyrun.run(go["argv"][0], go["argv"], self.base_path)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        argv = go["argv"]
        try:
            os.execve(argv[0], argv, env)
        except OSError as exc:
            _stderr_line(f"assay sandbox: cannot execute {argv[0]}: {exc.strerror}")
            os._exit(127)


def _wait_for(child: int) -> tuple[int, Any]:
    """Reap until ``child`` exits (PID 1 inherits orphans): its wait status and rusage."""
    while True:
        try:
            pid, st, usage = os.wait4(-1, 0)
        except ChildProcessError:
            return 0, None
        if pid == child:
            return st, usage


def _recv_nowait(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """Last message C3 queued before it exited (the socket is closed by then)."""
    sock.setblocking(False)
    last: dict[str, Any] | None = None
    try:
        while True:
            msg, fds = wire.recv(sock)
            for fd in fds:
                os.close(fd)
            if msg is None:
                break
            last = msg
    except (BlockingIOError, OSError, ValueError):
        pass
    return last, []


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
    cfg = json.loads(sys.argv[1])
    ctl = socket.socket(fileno=int(sys.argv[2]))
    os.set_inheritable(ctl.fileno(), False)
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
