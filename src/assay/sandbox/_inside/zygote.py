"""The fork server: a warm interpreter from which every sandbox and every program is forked.

Process tree::

    zygote ── C1 (unshares namespaces; reaps S)
                └── S = PID 1 of a slot (trusted init, root)
                      └── P (one per run: joins the run's cgroup (and a new IPC namespace
                           if no seccomp filter refuses IPC), drops every privilege, runs
                           the program as PID 2)

A *slot* is a set of namespaces (PID, mount, network, UTS) over the read-only template root,
used by one run at a time (slot.py). Its init ``S`` forks a fresh program process per run
(program.py, or the C launcher for executables); after each run it kills every process in
the namespace, resets the PID counter, detaches the run's tmpfs and mounts a new one, so
nothing of a run outlives it. ``S`` never reads a run's data: files, stdin, argv and
env go from the supervisor straight to the program process in fds, because every later
program is a fork of ``S``. Each link dies with its parent (PR_SET_PDEATHSIG), so killing
the supervisor tears everything down.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import sys
from importlib.util import MAGIC_NUMBER
from typing import Any

# Everything is imported now: after pivot_root the host's files are out of reach.
from . import landlock, linux, native, program, pyrun, rootfs, seccomp, slot, wire
from .arming import Arming


# fds of a slot request: [status socket]. fds of an arm request: one cgroup.procs fd per
# hierarchy. fds of a run request: see program.py.
class Zygote:
    def __init__(self, cfg: dict[str, Any], ctl: socket.socket) -> None:
        self.cfg = cfg
        self.ctl = ctl
        self.pid = os.getpid()
        self.children: dict[str, int] = {}
        self.filter: seccomp.Filter | None = None
        self.native: native.Native | None = None
        self.landlock_abi = 0
        self.base_path = [p for p in sys.path if p]
        #: Built by :meth:`prepare`; each slot gets a copy with its own ids.
        self.arming: Arming | None = None

    # -- start-up ---------------------------------------------------------------------------
    def prepare(self) -> dict[str, Any]:
        cfg = self.cfg
        info: dict[str, Any] = {
            "pid": self.pid,
            "python": sys.version.split()[0],
            "bytecode_magic": MAGIC_NUMBER.hex(),  # precompiled trusted scripts run here
        }
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
        cfg["launcher"] = False
        if cfg["launcher_fd"] >= 0:
            try:
                launcher = _read_fd(cfg["launcher_fd"])
                cfg["launcher"] = True
            except OSError as exc:  # executables then start from a fork, as Python does
                info["launcher_error"] = str(exc)
        if cfg["native_fd"] >= 0:
            try:
                self.native = native.Native(cfg["native_fd"], cfg["workdir"], cfg["userns"])
            except OSError as exc:  # the same steps in Python, slower
                info["native_error"] = str(exc)
        info["native"] = self.native is not None
        if self.native is not None:
            pyrun.report_pages = self.native.report_pages
        # Python program processes forked (and armed) in C: see native.Native.fork_program.
        info["native_fork"] = self.native is not None and self.native.can_fork
        rootfs.build_template(
            cfg["root"],
            cfg["ro_binds"],
            cfg["etc_binds"],
            cfg["userns"],
            launcher,
            cfg.get("image", False),
        )
        info["launcher"] = launcher is not None
        net_filter: seccomp.Filter | None = None
        if cfg["seccomp"]:
            # Compiled by the supervisor (the host's libseccomp): loaded raw, as ever.
            self.filter = seccomp.Filter(_read_fd(cfg["seccomp_fd"]))
            net_filter = seccomp.Filter(_read_fd(cfg["seccomp_net_fd"]))
            info["seccomp_instructions"] = self.filter.instructions
        if cfg["landlock"]:
            self.landlock_abi = landlock.abi_version()
        info["landlock_abi"] = self.landlock_abi
        self.arming = Arming(
            cfg, self.filter, self.native, self.landlock_abi, self.base_path, net_filter
        )
        for name in cfg["preimport"]:
            try:
                __import__(name)
            except Exception:
                pass
        pyrun.prebuild_streams()
        # A first compile here, with a run's file name: a run's compile then finds the
        # compiler's lazily made state, and that name interned, already in the image.
        compile("print(1)\n", cfg["workdir"] + "/main.py", "exec", dont_inherit=True)
        info["interned_headroom"] = make_intern_headroom()
        gc.collect()
        gc.freeze()  # keep forked children from dirtying the template's pages
        gc.disable()  # collections in forked children would touch (copy) shared pages
        # Hand back the free pages start-up left in malloc's heap (~0.5 MB): every fork
        # copies the page-table entries of what is mapped and every exit tears them down.
        linux.libc.malloc_trim(0)
        return info

    # -- main loop --------------------------------------------------------------------------
    def serve(self) -> None:
        # poll, not select: the control socket keeps the number it had in the host's
        # process, which passes 1023 in a busy service.
        poller = select.poll()
        poller.register(self.ctl, select.POLLIN)
        while True:
            ready = poller.poll(500)
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
        assert self.arming is not None
        # The slot's own user and group (one per slot, from the supervisor's id range), so
        # per-user kernel quotas (inotify, pipe pages, signals, fds in flight) are the run's.
        arming = self.arming.for_slot(
            int(prep.get("uid", self.arming.uid)), int(prep.get("gid", self.arming.gid))
        )
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
                net = bool(prep.get("net"))
                slot.Slot(arming, status, net).serve(self.cfg, int(prep["max_runs"]))
                os._exit(0)
            status.close()
        except BaseException as exc:
            slot.report_error(status, "namespaces", exc)
            os._exit(1)
        os.waitpid(pid, 0)  # until the slot's init is gone
        os._exit(0)


def _read_fd(fd: int) -> bytes:
    """The whole content of the file ``fd``, which is then closed."""
    try:
        return os.pread(fd, os.fstat(fd).st_size, 0)
    finally:
        os.close(fd)


def make_intern_headroom(limit: int = 1 << 20) -> int:
    """Have the interpreter's table of interned strings grow now, in the fork server.

    Every run interns the names its code uses. When the table is full, the next insertion
    builds a new table (~0.4 MB for the ~12,000 strings of this image) in the run's
    process: ~100 fresh pages, ~2 ms per run on this machine, in every run forked from a
    server whose table happened to be full. So the server inserts throwaway strings until
    the table grows (an allocation of more than 32 KiB, seen through ``_tracemalloc``),
    then frees them: the new table keeps room for at least as many strings as it holds.
    Returns how many were inserted (0 if ``_tracemalloc`` is missing).
    """
    try:
        import _tracemalloc
    except ImportError:
        return 0
    temps: list[str] = []
    _tracemalloc.start(1)
    try:
        while len(temps) < limit:
            before = _tracemalloc.get_traced_memory()[1]
            temps.append(sys.intern(f"\0assay-headroom-{len(temps)}"))
            if _tracemalloc.get_traced_memory()[1] - before > 32768:
                break
    finally:
        _tracemalloc.stop()
    n = len(temps)
    del temps
    return n


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
                "trace": program._trace(),
            },
        )
        os._exit(1)
    wire.send(ctl, {"kind": "ready", **info})
    zyg.serve()
    os._exit(0)
