"""The Python program process of a run: armed, then handed the request, then the program.

Forked from a slot's init (slot.py) for Python runs, and for exec-mode runs when the C
launcher is unavailable. Arming and taking the request are done by launcher.c's library
(native.py) when Assay could build it, else by the same steps written here in Python.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import os
import resource
import signal
import socket
from typing import TYPE_CHECKING

from . import landlock, linux, pyrun, rootfs, wire

if TYPE_CHECKING:
    from .arming import Arming

    #: A program process's mode, argv and env (None: the slot's default): program_head.
    Head = tuple[str, list[str], dict[str, str] | None]

# fds of a run request, sent by the supervisor straight to the armed program process:
# stdout, stderr, file contents, stdin, spec, then the caller's extra fds.
R_STDOUT, R_STDERR, R_FILES, R_STDIN, R_SPEC = range(5)
HIGH_FD = 1000


class Spec:
    """A run's spec: NUL-terminated tokens, in the order launcher.c documents.

    A plain class: ``dataclasses`` would pull ``inspect``, ``ast`` and ``dis`` (~1 MB) into
    the fork server's image, which every run copies and tears down.
    """

    __slots__ = ("argv", "collect", "env", "files", "mode", "rlimits")

    def __init__(
        self,
        mode: str,
        argv: list[str],
        env: dict[str, str],
        rlimits: tuple[int, int, int, int],  # file bytes, open files, stack bytes, CPU seconds
        files: list[tuple[str, int, int]],  # (path, size, mode)
        collect: bytes,
    ) -> None:
        self.mode = mode
        self.argv = argv
        self.env = env
        self.rlimits = rlimits
        self.files = files
        self.collect = collect

    @classmethod
    def parse(cls, data: bytes) -> Spec:
        t = data.decode("utf-8", "surrogateescape").split("\0")
        n = int(t[1])
        argv, i = t[2 : 2 + n], 2 + n
        n = int(t[i])
        env = dict(item.partition("=")[::2] for item in t[i + 1 : i + 1 + n])
        i += 1 + n
        rl = (int(t[i]), int(t[i + 1]), int(t[i + 2]), int(t[i + 3]))
        n, i = int(t[i + 4]), i + 5
        files = [(t[i + 3 * k], int(t[i + 3 * k + 1]), int(t[i + 3 * k + 2])) for k in range(n)]
        collect = t[i + 3 * n].encode("utf-8", "surrogateescape")
        return cls(t[0], argv, env, rl, files, collect)


def program_head(data: bytes, default_env: tuple[bytes, bytes]) -> Head:
    """What a program process still needs of its spec once launcher.c's steps have taken
    the request (files, stdio and rlimits are done): its mode, argv and env, the env None
    when it is the slot's default (``default_env``: the count and the NUL-terminated tokens
    the supervisor encodes it as), which ``os.environ`` already holds. It builds a few
    objects, not the whole spec's (~40): each object a run makes is written on a page the
    program process shares with the slot's init, which the kernel then copies."""
    mode, argc, rest = data.split(b"\0", 2)
    n = int(argc)
    t = rest.split(b"\0", n + 1)
    if n == 1:
        argv = [t[0].decode("utf-8", "surrogateescape")]
    else:
        argv = [token.decode("utf-8", "surrogateescape") for token in t[:n]]
    if t[n] == default_env[0] and t[n + 1].startswith(default_env[1]):
        return mode.decode(), argv, None
    return mode.decode(), argv, Spec.parse(data).env


def run_program(
    a: Arming, cg_fds: list[int], req: socket.socket, collect_w: int, ruleset: int
) -> None:
    """The program process, in two steps.

    Armed (before any request exists): join the run's cgroup (and a new IPC namespace when
    there is no seccomp filter to refuse IPC syscalls), drop every privilege, load Landlock
    and seccomp, report "armed" to the supervisor. Run: take the request straight from the
    supervisor, write the input files (as the sandbox user), take stdio, rlimits, env and
    argv, report "running", and close every channel, so nothing the program does can be
    mistaken for, or forge, a message from the trusted side.
    """
    if a.native is not None:
        fd = req.detach()
        bpf = a.filter.bpf if a.filter is not None else None
        if not a.native.arm(a.uid, a.gid, cg_fds, ruleset, fd, bpf):
            os._exit(126)
        os.write(fd, wire.ARMED)  # one record on the SEQPACKET socket
        head = program_head(a.native.take(fd, collect_w), a.default_env_spec)
    else:
        spec = _arm_and_take(a, cg_fds, req, collect_w, ruleset)
        head = (spec.mode, spec.argv, None if spec.env == a.default_env else spec.env)
    start(a, *head)


def start(a: Arming, mode: str, argv: list[str], env: dict[str, str] | None) -> None:
    """Run the program of an armed process whose request is taken: never returns. ``env``:
    None for the slot's default, which the slot's init set ``os.environ`` to (comparing
    against os.environ, an encoding mapping, costs ~0.2 ms of copy-on-write faults)."""
    if mode == "python" and env is not None:
        os.environ.clear()
        os.environ.update(env)
    # Objects the slot's init made since the fork server froze its heap are still "young":
    # the program's first collection would walk them and rewrite their headers, copying
    # their pages (and, depending on what the server happened to import, ~2 ms per run).
    # Freezing is O(1): it splices the generation lists onto the permanent one.
    gc.freeze()
    gc.enable()  # programs get the interpreter they expect
    if mode == "python":
        pyrun.run(argv[0], argv, a.base_path)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execve(argv[0], argv, a.default_env if env is None else env)
    except OSError as exc:
        _stderr_line(f"assay sandbox: cannot execute {argv[0]}: {exc.strerror}")
        os._exit(127)


def _arm_and_take(
    a: Arming, cg_fds: list[int], req: socket.socket, collect_w: int, ruleset: int
) -> Spec:
    """The same steps as launcher.c's assay_arm and assay_take, in Python."""
    try:
        for fd in cg_fds:
            os.write(fd, b"0")  # join the run's cgroups (one fd per hierarchy)
            os.close(fd)
        if cg_fds:  # /proc/self/cgroup then shows "/", not the host's cgroup paths
            linux.unshare(linux.CLONE_NEWCGROUP)
        if a.filter is None:  # the filter refuses every IPC syscall (seccomp.IPC_SYSCALLS)
            linux.unshare(linux.CLONE_NEWIPC)  # SysV IPC and POSIX queues of this run only
        os.setsid()
        os.chdir(a.workdir)
        uid, gid = a.uid, a.gid
        if not a.userns:
            os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if a.clear_capabilities() != 0:  # a user-namespace owner keeps its capabilities
            raise OSError(ctypes.get_errno(), "capset")
        linux.prctl(linux.PR_SET_DUMPABLE, 1)
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        if ruleset >= 0:
            landlock.restrict_self(ruleset)
        if a.filter is not None:
            a.filter.load()
        wire.send_raw(req, wire.ARMED)
        go, fds = wire.recv_raw(req)
        if not go:
            os._exit(0)
        spec = Spec.parse(wire.read_all(fds[R_SPEC]))
        rootfs.write_files(fds[R_FILES], spec.files, a.workdir, uid, gid)
        if spec.collect:
            os.write(collect_w, spec.collect)
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
        _set_rlimits(spec.rlimits)
    except BaseException:
        with contextlib.suppress(OSError):
            wire.send(req, {"kind": "error", "message": _trace()[-4000:]})
        os._exit(126)
    wire.send_raw(req, b'{"kind":"running"}')
    req.close()
    return spec


def _trace() -> str:
    """The current exception's traceback. ``traceback`` (with linecache, tokenize and
    textwrap: ~0.5 MB of heap) is imported only here, on a failure, so the fork server's
    image, which every run copies and tears down, stays smaller."""
    try:
        import traceback

        return traceback.format_exc()
    except BaseException as exc:  # the import itself can fail inside a sandbox
        return f"{exc!r} while formatting a traceback"


def _set_rlimits(limits: tuple[int, int, int, int]) -> None:
    file_bytes, open_files, stack, cpu = limits
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    resource.setrlimit(resource.RLIMIT_STACK, (stack, stack))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _stderr_line(text: str) -> None:
    try:
        os.write(2, (text.rstrip("\n") + "\n").encode())
    except OSError:
        pass
