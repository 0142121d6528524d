"""Starting, talking to and replacing the fork server process."""

from __future__ import annotations

import collections
import contextlib
import os
import select
import socket
import subprocess
import threading
import time
from typing import Any

from .. import defaults
from ..errors import SandboxError
from ._image_root import wrap
from ._inside import seccomp, wire
from ._launch import build_native
from .config import SandboxConfig

_INSIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_inside")
#: The fork server's whole command line after ``python -I -c``: it runs the bundle (boot.py
#: and the package's sources) from a memfd, so nothing in it, nor in the modules' file
#: names, names a host path (every Python program is a fork of this process).
ZYGOTE_MARK = "# assay fork server"
_BOOT = (
    ZYGOTE_MARK + "\nimport os, sys\nfd = int(sys.argv[1])\n"
    "exec(compile(os.pread(fd, os.fstat(fd).st_size, 0), '/assay/boot.py', 'exec'))\n"
)


def readable(obj: int | socket.socket, timeout: float | None) -> bool:
    """Whether ``obj`` is readable (or hung up) within ``timeout`` seconds: ``poll`` rather
    than ``select``, which fails on fds above 1023 (a service holding many sessions)."""
    poller = select.poll()
    poller.register(obj, select.POLLIN)
    wait = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
    return bool(poller.poll(wait))


def _seccomp_fd(inet: bool = False) -> int:
    """A memfd holding the sandbox's seccomp program, compiled here with the host's
    libseccomp (the fork server only loads the program)."""
    try:
        bpf = seccomp.build(inet).bpf
    except seccomp.SeccompUnavailable as exc:
        raise SandboxError(f"cannot compile the seccomp filter: {exc}") from exc
    return wire.memfd_with(bpf, "assay-seccomp")


def kill_and_reap(proc: subprocess.Popen[bytes], wait_s: float) -> None:
    """Kill ``proc`` if it still runs and reap it within ``wait_s`` seconds; a process that
    is not gone by then (stuck in the kernel) is left to ``init``, never waited on for ever."""
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)


def _bundle() -> bytes:
    """boot.py and the sources of every module of the ``_inside`` package."""
    sources = {}
    for name in sorted(os.listdir(_INSIDE)):
        if name.endswith(".py") and name != "boot.py":
            with open(os.path.join(_INSIDE, name), encoding="utf-8") as fh:
                sources[name[:-3]] = fh.read()
    with open(os.path.join(_INSIDE, "boot.py"), encoding="utf-8") as fh:
        boot = fh.read()
    return (boot + f"\n\nos.close(fd)\nrun({sources!r})\n").encode()


class ZygoteProcess:
    """One fork server. Thread-safe: any thread may send run requests."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cfg = {
            "root": config.mountpoint,
            "ro_binds": list(config.ro_binds) + list(config.extra_ro_binds),
            "etc_binds": list(config.etc_binds),
            "image": config.image_root is not None,
            "preimport": list(config.preimport),
            "userns": config.use_userns(),
            "background_idle": config.background_idle,
            "uid": config.uid,
            "gid": config.gid,
            "seccomp": config.seccomp,
            "landlock": config.landlock,
            "workdir": defaults.WORK_DIR,
            "default_disk_mb": defaults.DEFAULT_DISK_MB,
            "default_env": defaults.SANDBOX_ENV,
            "launcher_fd": -1,
            "native_fd": -1,
        }
        # The launcher and the C library travel as open files, not paths: the fork server
        # keeps no host path in its memory, which every program process inherits.
        passed = [child.fileno()]
        if config.launcher:
            built = build_native()
            for key, path in (("launcher_fd", built.launcher), ("native_fd", built.library)):
                if path is not None:
                    with contextlib.suppress(OSError):
                        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                        cfg[key] = fd
                        passed.append(fd)
        if config.seccomp:
            # The fork server loads the filters compiled here: an image need not have
            # libseccomp, and the host's fork server then never maps it (five more memory
            # areas, and its heap, that every run's fork would copy and its exit tear down).
            bpf, bpf_net = _seccomp_fd(), _seccomp_fd(inet=True)
            cfg["seccomp_fd"], cfg["seccomp_net_fd"] = bpf, bpf_net
            passed += [bpf, bpf_net]
        bundle = wire.memfd_with(_bundle(), "assay-boot")
        passed.append(bundle)
        env = {"PATH": defaults.SANDBOX_PATH, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        argv = [config.python, "-I", "-c", _BOOT, str(bundle), str(child.fileno())]
        try:
            if config.image_root is not None:
                argv = wrap(argv, config.image_root)
            self.proc = subprocess.Popen(
                argv,
                env=env,
                pass_fds=passed,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd="/",
                start_new_session=True,
            )
        except (OSError, SandboxError) as exc:
            parent.close()
            child.close()
            if isinstance(exc, SandboxError):
                raise
            raise SandboxError(
                f"cannot start the sandbox interpreter {config.python!r}: {exc}"
            ) from exc
        finally:
            for fd in passed[1:]:
                os.close(fd)
        child.close()
        self.sock = parent
        wire.send(parent, cfg)  # the configuration is the first message
        threading.Thread(target=self._drain_stderr, daemon=True, name="assay-zygote-stderr").start()
        self.info = self._handshake()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr_tail.append(line.decode(errors="replace").rstrip())

    def _handshake(self) -> dict[str, Any]:
        ready = readable(self.sock, defaults.ZYGOTE_START_TIMEOUT_S)
        msg = None
        if ready:
            try:
                msg, _fds = wire.recv(self.sock)
            except OSError:
                msg = None
        if msg is None or msg.get("kind") != "ready":
            detail = (msg or {}).get("message") or "no answer"
            self.close()
            time.sleep(0.05)
            tail = "\n".join(self._stderr_tail)
            raise SandboxError(f"fork server failed to start: {detail}\n{tail}".rstrip())
        return msg

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, msg: dict[str, Any], fds: list[int]) -> None:
        with self._lock:
            try:
                wire.send(self.sock, msg, fds)
            except OSError as exc:
                raise SandboxError(f"fork server unreachable: {exc}") from exc

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            kill_and_reap(self.proc, 5)
