"""The Python program process of a run: armed, then handed the request, then the program.

Forked from a slot's init (slot.py) for Python runs (and for exec-mode runs when the C
launcher is unavailable); launcher.c is the same sequence in C.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import json
import os
import resource
import signal
import socket
import traceback
from typing import TYPE_CHECKING, Any

from . import landlock, linux, pyrun, rootfs, wire

if TYPE_CHECKING:
    from .zygote import Zygote

# fds of a run request, sent by the supervisor straight to the armed program process:
# stdout, stderr, files archive, stdin, spec (JSON), then the caller's extra fds.
R_STDOUT, R_STDERR, R_FILES, R_STDIN, R_SPEC = range(5)
HIGH_FD = 1000


def run_program(
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
        spec = json.loads(read_all(fds[R_SPEC]))
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


def read_all(fd: int) -> bytes:
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
