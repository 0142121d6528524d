"""The hardened tier: runs inside gVisor (``runsc``), kept warm.

gVisor puts a user-space kernel (the Sentry) between the program and the host: the
program's system calls are served by the Sentry, which itself uses a small, filtered set of
host calls, so a kernel bug reachable from the program's ~350 system calls is no longer a
host escape. The cost is start-up (a cold ``runsc do`` starts a sandbox kernel, ~0.5-1 s)
and slower system calls and file access. So this tier keeps a pool of started sandboxes
(containers whose PID 1 is a warm interpreter, ``_gvserver``) and sends each run to one:
a run costs a fork inside gVisor, not a sandbox start.

Same interface and results as :class:`~assay.sandbox.Sandbox`: ``execute(RunRequest)`` ->
``ExecResult`` with the same statuses, CPU-time verdicts, output caps and collected files,
on the host's runtime (read-only binds of ``/usr`` ...) or a task image's root. A container
(``_gvcontainer``) serves up to ``defaults.GVISOR_RUNS_PER_CONTAINER`` runs (each with a fresh tmpfs of its
``disk_mb`` and every process of the run killed), with its memory limit set per run on its
host cgroup, and is then replaced; an OOM kill, protocol failure or missed deadline destroys
it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import itertools
import logging
import os
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

from .. import defaults
from ..errors import SandboxError, ValidationError
from ..types import ExecResult
from ._gvcontainer import Container
from ._gvisor_wire import Stopped, server_program
from ._request import files_over_memory, validate_request
from ._run import RunRequest
from .cgroups import CgroupBackend, detect
from .config import SandboxConfig

_HOST_SKELETON = ("usr", "lib", "lib64", "lib32", "libx32", "bin", "sbin")

_log = logging.getLogger(__name__)


def _seccomp_program(inet: bool = False) -> str:
    """The default tier's seccomp filter (compiled here with the host's libseccomp), which
    the exec server loads into every program: the same calls refused, the same errors."""
    from ._inside import seccomp

    try:
        return base64.b64encode(seccomp.build(inet).bpf).decode()
    except seccomp.SeccompUnavailable as exc:
        raise SandboxError(f"cannot compile the seccomp filter for the gVisor tier: {exc}") from exc


def runsc_path() -> str | None:
    return shutil.which("runsc")


def available() -> tuple[bool, str]:
    """Whether this tier can run here, and why not."""
    path = runsc_path()
    if path is None:
        return False, "runsc not installed (apt-get install runsc)"
    if os.geteuid() != 0:
        return False, "runsc needs root here"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"runsc does not start: {exc}"
    return True, out.stdout.splitlines()[0] if out.stdout else path


class GVisorSandbox:
    """A warm pool of gVisor sandboxes behind the :class:`~assay.sandbox.Sandbox` interface
    the runner uses (thread-safe)."""

    isolation = "gvisor"

    def __init__(self, config: SandboxConfig | None = None, pool_size: int | None = None) -> None:
        self.config = config or SandboxConfig()
        ok, why = available()
        if not ok:
            raise SandboxError(f"the gVisor tier is unavailable: {why}")
        self.runsc = runsc_path() or "runsc"
        self.state = os.path.join(str(defaults.state_dir()), "gvisor", uuid.uuid4().hex[:8])
        os.makedirs(self.state, exist_ok=True)
        os.chmod(self.state, 0o700)
        self.insecure = False
        #: None where this host gives us no cgroups: memory is then only polled inside.
        self.cgroups: CgroupBackend | None = detect(self.config.cgroup_root)
        if self.cgroups is not None:
            self.cgroups.reclaim_stale()
        self.pool_size = pool_size if pool_size is not None else 2
        self._lock = threading.Lock()
        self._idle: collections.deque[Container] = collections.deque()
        self._starting = 0
        self._closed = False
        self._info: dict[str, Any] = {}
        self._ids = itertools.count()
        self._skeleton = self._make_skeleton()
        self.seccomp = _seccomp_program() if self.config.seccomp else ""
        #: Loopback runs' filter (IP sockets allowed): gVisor's ``--network=none`` netstack
        #: has a loopback of its own per sandbox and nothing else.
        self.seccomp_net = _seccomp_program(inet=True) if self.config.seccomp else ""

    # -- the container ------------------------------------------------------------------
    def runsc_argv(self) -> list[str]:
        return [
            self.runsc,
            "--network=none",
            "--ignore-cgroups",
            "--host-uds=open",  # the exec server connects to the relays of a run's extra fds
            f"--root={os.path.join(self.state, 'runsc')}",
        ]

    def _make_skeleton(self) -> str:
        """The read-only root of host-runtime containers: mount points, the host's
        top-level symlinks (merged /usr) and a minimal /etc."""
        root = os.path.join(self.state, "root")
        os.makedirs(root, exist_ok=True)
        for name in _HOST_SKELETON:
            path = "/" + name
            if os.path.islink(path):
                os.symlink(os.readlink(path), os.path.join(root, name))
            elif os.path.isdir(path):
                os.makedirs(os.path.join(root, name), exist_ok=True)
        for name in ("proc", "dev", "tmp", "work", "etc", "sys"):
            os.makedirs(os.path.join(root, name), exist_ok=True)
        from ._inside.rootfs import GROUP, HOSTS, PASSWD

        for name, text in (("passwd", PASSWD), ("group", GROUP), ("hosts", HOSTS)):
            with open(os.path.join(root, "etc", name), "w") as fh:
                fh.write(text)
        for name in self.config.etc_binds:  # copies: the skeleton is per pool, read-only
            src, dst = os.path.join("/etc", name), os.path.join(root, "etc", name)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.isdir(src):
                shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
            elif os.path.isfile(src):
                shutil.copyfile(src, dst)
        return root

    def spec(self, bundle: str) -> dict[str, Any]:
        """The OCI runtime spec of one container."""
        image = self.config.image_root
        mounts: list[dict[str, Any]] = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
            {
                "destination": "/tmp",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "nodev", "size=64m"],
            },
            {
                "destination": "/dev/shm",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "nodev", "size=64m"],
            },
            {
                "destination": "/dev/.assay-uds",
                "type": "bind",
                "source": os.path.join(bundle, "uds"),
                "options": ["rbind", "nosuid", "nodev", "noexec"],
            },
            {
                "destination": "/work",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "nodev", f"size={defaults.DEFAULT_DISK_MB}m"],
            },
        ]
        if image is None:
            for path in [*self.config.ro_binds, *self.config.extra_ro_binds]:
                if os.path.isdir(path) and not os.path.islink(path):
                    mounts.append(
                        {
                            "destination": path,
                            "type": "bind",
                            "source": path,
                            "options": ["rbind", "ro", "nosuid", "nodev"],
                        }
                    )
        # The exec server's (root in gVisor's kernel: CAP_SYS_ADMIN mounts each run's tmpfs
        # there, not on the host); the program drops them all.
        caps = [
            "CAP_SYS_ADMIN",
            "CAP_SETPCAP",  # to empty the program's bounding set
            "CAP_SETUID",
            "CAP_SETGID",
            "CAP_CHOWN",
            "CAP_FOWNER",
            "CAP_DAC_OVERRIDE",
            "CAP_KILL",
        ]
        return {
            "ociVersion": "1.0.0",
            "process": {
                "user": {"uid": 0, "gid": 0},
                "args": [self.config.python, "-I", "-c", server_program()],
                "env": [],  # each run gets its own; /proc/1/environ shows nothing
                "cwd": "/",
                "terminal": False,
                "noNewPrivileges": True,
                "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            },
            "root": {"path": image or self._skeleton, "readonly": True},
            "hostname": "sandbox",
            "mounts": mounts,
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
            },
        }

    # -- the pool -----------------------------------------------------------------------
    def _take(self) -> Container:
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            container = self._idle.popleft() if self._idle else None
            empty = not self._idle
        if empty:  # the next run would wait for a start: begin one now, off this path
            self._refill(1)
        if container is not None:
            return container
        for delay in (0.1, 0.5):  # a start can fail when many start at once on a busy host
            try:
                return Container(self)
            except SandboxError:
                time.sleep(delay)
        return Container(self)

    def _refill(self, at_most: int | None = None) -> None:
        with self._lock:
            want = self.pool_size - len(self._idle) - self._starting
            if at_most is not None:
                want = min(want, at_most)
            if self._closed or want <= 0:
                return
            self._starting += want
        for _ in range(want):
            threading.Thread(target=self._start_one, daemon=True, name="assay-gvisor").start()

    def _start_one(self) -> None:
        container = None
        try:
            container = Container(self)
        except SandboxError:
            pass
        except Exception:  # a spawn's OSError, say: still a start that ended, and counted so
            _log.exception("gVisor sandbox start failed")
        with self._lock:
            self._starting -= 1
            if container is not None and not self._closed:
                self._info = container.info
                self._idle.append(container)
                container = None
        if container is not None:
            container.destroy()

    def _give_back(self, container: Container) -> None:
        with self._lock:
            keep = not self._closed and len(self._idle) < self.pool_size
            if keep and container.reusable():
                self._idle.append(container)
                return
        self._destroy_later(container)

    def _destroy_later(self, container: Container) -> None:
        """``runsc delete`` takes a while: never on a run's path. Every process of the
        sandbox (its kernel, gofer and the host stubs of its programs) is killed first,
        here: nothing of it outlives the run that retired it."""
        if container.cg is not None:
            container.cg.kill_all()
        threading.Thread(target=container.destroy, daemon=True, name="assay-gvisor-rm").start()

    def execute(self, req: RunRequest) -> ExecResult:
        """Run ``req`` in a warm gVisor sandbox. Infrastructure failures come back as
        ``sandbox_error`` results, as from the default tier; a bad request raises the
        default tier's ValidationError. ``pass_fds`` reach the program as 3, 4, ... through
        a relay (a Unix socket per fd, connected by the exec server before the fork)."""
        try:
            if req.companion is not None:  # its runs are supervised elsewhere: see Sandbox
                raise ValidationError("companion", "the gVisor tier serves no companion")
            files, collect = validate_request(req)
            too_big = files_over_memory(files, req.limits)
            if too_big is not None:
                for fd in req.pass_fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                return too_big
            req = replace(req, files=files, collect=collect)
            container = self._take()
        except SandboxError as exc:
            for fd in req.pass_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            return ExecResult(status="sandbox_error", stderr=str(exc).encode())
        except BaseException:
            for fd in req.pass_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        self._info = container.info
        try:
            result = container.run(req)
        except Stopped:
            self._destroy_later(container)
            return ExecResult(status="runtime_error", signal=9, stderr=b"")
        except (SandboxError, OSError, ValueError, KeyError) as exc:
            self._destroy_later(container)
            return ExecResult(status="sandbox_error", stderr=str(exc).encode())
        self._give_back(container)
        return result

    def warm_up(self, slots: int | None = None) -> None:
        """Start up to ``slots`` sandboxes (default: the pool size) now and wait for them."""
        slots = self.pool_size if slots is None else slots
        with self._lock:
            self.pool_size = max(self.pool_size, min(slots, self.pool_size))
        self._refill()
        deadline = time.monotonic() + defaults.GVISOR_START_TIMEOUT_S
        while time.monotonic() < deadline:
            with self._lock:
                if len(self._idle) >= min(slots, self.pool_size) or self._starting == 0:
                    return
            time.sleep(0.02)

    @property
    def idle_slots(self) -> int:
        with self._lock:
            return len(self._idle)

    @property
    def zygote_info(self) -> dict[str, object]:
        return dict(self._info)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = list(self._idle)
            self._idle.clear()
        for container in idle:
            container.destroy()
        deadline = time.monotonic() + defaults.GVISOR_START_TIMEOUT_S
        while time.monotonic() < deadline:
            with self._lock:
                if self._starting == 0:
                    break
            time.sleep(0.02)
        shutil.rmtree(self.state, ignore_errors=True)
        if self.cgroups is not None:
            self.cgroups.close()

    def __enter__(self) -> GVisorSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
