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
serves ``MAX_RUNS`` runs (each with a wiped ``/work`` and ``/tmp`` and every process of the
run killed) and is then replaced; any protocol failure or missed deadline destroys it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

from .. import defaults
from ..errors import SandboxError
from ..types import ExecResult
from ._gvisor_wire import (
    Stopped,
    recv,
    recv_bytes,
    relay,
    send,
    send_bytes,
    server_program,
    wait_answer,
)
from ._run import RunRequest
from .cgroups import CgroupBackend, CgroupLimits, detect
from .config import SandboxConfig
from .sandbox import validate_request

#: Runs one container serves before it is replaced.
MAX_RUNS = 64
#: Seconds a container may take to start and report ready.
START_TIMEOUT_S = 30.0
#: Seconds past a run's wall limit before the host gives up on the container.
ANSWER_GRACE_S = 5.0
_HOST_SKELETON = ("usr", "lib", "lib64", "lib32", "libx32", "bin", "sbin")
#: The sandbox's host cgroup while it starts (the Sentry, gofer and runsc themselves).
START_LIMITS = CgroupLimits(memory_bytes=1 << 30, pids=4096)
#: Host threads and stub processes of one sandbox (the program's own processes are capped
#: inside by RLIMIT_NPROC).
PIDS = 4096
#: Host memory a run may add to its sandbox beyond its ``memory_mb`` (the Sentry's own
#: bookkeeping for the run counts against the run, as kernel memory does in a cgroup).
HOST_SLACK = 0
#: Growth of a sandbox's host memory (over its fresh state) after which it is replaced.
RETIRE_GROWTH = 64 << 20


def _seccomp_program() -> str:
    """The default tier's seccomp filter (compiled here with the host's libseccomp), which
    the exec server loads into every program: the same calls refused, the same errors."""
    from ._inside import seccomp

    try:
        return base64.b64encode(seccomp.build().bpf).decode()
    except seccomp.SeccompUnavailable as exc:
        raise SandboxError(f"cannot compile the seccomp filter for the gVisor tier: {exc}") from exc


def _join(fds: list[int]) -> None:
    """In the forked ``runsc run``, before exec: move into the sandbox's cgroup."""
    for fd in fds:
        os.write(fd, b"0")


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


class _Container:
    """One started gVisor sandbox whose PID 1 is the exec server."""

    def __init__(self, owner: GVisorSandbox) -> None:
        self.owner = owner
        self.id = f"assay-{uuid.uuid4().hex[:12]}"
        self.bundle = os.path.join(owner.state, self.id)
        self.runs = 0
        self.uds = os.path.join(self.bundle, "uds")
        os.makedirs(self.uds, mode=0o700)
        with open(os.path.join(self.bundle, "config.json"), "w") as fh:
            json.dump(owner.spec(self.bundle), fh)
        # The whole sandbox (runsc, its Sentry and gofer, every program's memory in the
        # Sentry's memory file) lives in one host cgroup: each run's memory limit is set on
        # it, so the host kernel enforces what a 10 ms poll inside cannot.
        self.cg = owner.cgroups.create(START_LIMITS) if owner.cgroups is not None else None
        join = self.cg.procs_fds() if self.cg is not None else []
        try:
            self.proc = subprocess.Popen(
                [*owner.runsc_argv(), "run", "--bundle", self.bundle, self.id],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=join,
                preexec_fn=(lambda: _join(join)) if join else None,
            )
        except BaseException:
            if self.cg is not None:
                self.cg.destroy()
            raise
        finally:
            for fd in join:
                os.close(fd)
        self.dead = False
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd, self.rfd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        with contextlib.suppress(OSError):  # a sandbox that died says why just below
            send(self.wfd, {"kind": "setup", "seccomp": owner.seccomp})
        ready = recv(self.rfd, time.monotonic() + START_TIMEOUT_S)
        if ready is None or ready.get("kind") != "ready":
            err = self._stderr()
            self.destroy()
            raise SandboxError(f"gVisor sandbox did not start: {err or 'no answer'}")
        self.info = ready
        #: What the started sandbox holds on the host; a container that has grown past it
        #: by more than ``RETIRE_GROWTH`` after a run is replaced.
        self.base = self.cg.usage_bytes() if self.cg is not None else 0

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def run(self, req: RunRequest) -> ExecResult:
        lim = req.limits
        msg: dict[str, Any] = {
            "mode": req.mode,
            "argv": list(req.argv),
            # The bytes follow the message, files then stdin, as they are (no copy in JSON).
            "files": [[p, len(c), m] for p, c, m in req.files],
            "stdin_size": len(req.stdin),
            "env": dict(req.env),
            "collect": list(req.collect),
            "limits": {
                "time_s": lim.time_s,
                "wall_s": lim.effective_wall_s,
                "memory_mb": lim.memory_mb,
                # The host cgroup enforces memory where there is one (a summed RSS would
                # count pages that forked processes share once per process).
                "poll_memory": self.cg is None,
                "processes": lim.processes,
                "output_bytes": lim.output_bytes,
                "file_bytes": lim.file_bytes,
                "disk_mb": lim.disk_mb,
                "collect_bytes": lim.disk_mb << 20,
            },
        }
        self.runs += 1
        run_base = 0
        if self.cg is not None:
            run_base = self.cg.usage_bytes()
            budget = run_base + (lim.memory_mb << 20) + HOST_SLACK
            self.cg.arm(CgroupLimits(memory_bytes=budget, pids=PIDS), zero=True)
        started = time.monotonic()
        listeners = []
        for i in range(len(req.pass_fds)):
            path = os.path.join(self.uds, f"fd{i}.sock")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(1)
            listeners.append(listener)
        msg["pass_fds"] = len(listeners)
        relays: list[threading.Thread] = []
        deadline = started + lim.effective_wall_s + ANSWER_GRACE_S
        try:
            send(self.wfd, msg)
            for blob in [*(c for _p, c, _m in req.files), req.stdin]:
                if not send_bytes(self.wfd, blob, deadline):
                    if self._out_of_memory():
                        return self._files_too_big(started)
                    raise SandboxError("gVisor sandbox stopped reading the run's files")
            for listener, fd in zip(listeners, req.pass_fds, strict=True):
                listener.settimeout(START_TIMEOUT_S)
                conn, _ = listener.accept()
                pump = threading.Thread(
                    target=relay, args=(conn, fd), daemon=True, name="assay-gvisor-fd"
                )
                pump.start()
                relays.append(pump)
        except OSError as exc:
            raise SandboxError(f"gVisor sandbox unreachable: {exc}") from exc
        finally:
            for listener in listeners:
                listener.close()
            for fd in req.pass_fds[len(relays) :]:  # never handed to a relay
                with contextlib.suppress(OSError):
                    os.close(fd)
        staged = recv(self.rfd, deadline)
        if staged is None and self._out_of_memory():
            return self._files_too_big(started)
        if staged is None or staged.get("kind") != "staged":  # the server's error instead
            answer = staged
        elif req.stop_fd >= 0 and not wait_answer(self.rfd, req.stop_fd, deadline):
            # Stopped by the caller: the whole sandbox goes, as a killed program.
            raise Stopped
        else:
            answer = recv(self.rfd, deadline)
        for pump in relays:
            pump.join(timeout=5)
        if answer is None and self._out_of_memory():
            # The host kernel stopped the run at its memory limit: the sandbox went with it.
            assert self.cg is not None
            return ExecResult(
                status="memory_limit",
                signal=9,
                cpu_s=self.cg.cpu_seconds(),  # the Sentry's work for the run included
                wall_s=time.monotonic() - started,
                peak_memory_bytes=self._peak(0, run_base),
            )
        if answer is None:
            raise SandboxError(f"gVisor sandbox gave no answer {self._stderr()}".strip())
        if answer.get("status") == "sandbox_error":
            raise SandboxError(f"gVisor exec server: {answer.get('error')}")
        sizes = [answer["stdout"], answer["stderr"], *(n for _rel, n in answer["files"])]
        blobs = [recv_bytes(self.rfd, n, deadline) for n in sizes]
        if any(b is None for b in blobs):
            raise SandboxError("gVisor sandbox cut its answer short")
        stdout, stderr, *contents = (b or b"" for b in blobs)
        return ExecResult(
            status=answer["status"],
            exit_code=answer["exit_code"],
            signal=answer["signal"],
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=answer["stdout_truncated"],
            stderr_truncated=answer["stderr_truncated"],
            cpu_s=answer["cpu_s"],
            wall_s=answer["wall_s"],
            peak_memory_bytes=self._peak(answer["peak_memory_bytes"], run_base),
            leftover_processes=answer["leftover_processes"],
            files={rel: data for (rel, _n), data in zip(answer["files"], contents, strict=True)},
        )

    def _out_of_memory(self) -> bool:
        """Whether the host kernel OOM-killed this sandbox (which is then gone)."""
        if self.cg is not None and self.cg.oom_killed():
            self.dead = True
        return self.dead

    def _files_too_big(self, started: float) -> ExecResult:
        """The run's input files did not fit its memory (as the default tier says it)."""
        return ExecResult(
            status="memory_limit",
            signal=9,
            stderr=b"assay: the input files do not fit the run's memory limit\n",
            wall_s=time.monotonic() - started,
        )

    def _peak(self, polled: int, run_base: int) -> int:
        """What the run added to the sandbox's host memory at its peak (as the default
        tier's cgroup counts a run), else the peak resident memory polled inside."""
        if self.cg is None or not self.cg.peak_resets:
            return polled
        return max(0, self.cg.peak_memory_bytes() - run_base)

    def destroy(self) -> None:
        subprocess.run(
            [*self.owner.runsc_argv(), "delete", "-force", self.id],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        shutil.rmtree(self.bundle, ignore_errors=True)
        if self.cg is not None:
            self.cg.kill_all()
            self.cg.destroy()

    def reusable(self) -> bool:
        """Fewer than ``MAX_RUNS`` runs, alive, and not grown on the host (the Sentry keeps
        some freed memory: a run's budget is counted from what it holds at the start)."""
        if self.dead or self.runs >= MAX_RUNS or self.proc.poll() is not None:
            return False
        return self.cg is None or self.cg.usage_bytes() <= self.base + RETIRE_GROWTH


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
        self._idle: collections.deque[_Container] = collections.deque()
        self._starting = 0
        self._closed = False
        self._info: dict[str, Any] = {}
        self._ids = itertools.count()
        self._skeleton = self._make_skeleton()
        self.seccomp = _seccomp_program() if self.config.seccomp else ""

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
    def _take(self) -> _Container:
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            container = self._idle.popleft() if self._idle else None
            empty = not self._idle
        if empty:  # the next run would wait for a start: begin one now, off this path
            self._refill(1)
        if container is not None:
            return container
        try:
            return _Container(self)
        except SandboxError:  # a start can fail when many start at once: one more try
            return _Container(self)

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
            container = _Container(self)
        except SandboxError:
            pass
        with self._lock:
            self._starting -= 1
            if container is not None and not self._closed:
                self._info = container.info
                self._idle.append(container)
                container = None
        if container is not None:
            container.destroy()

    def _give_back(self, container: _Container) -> None:
        with self._lock:
            keep = not self._closed and len(self._idle) < self.pool_size
            if keep and container.reusable():
                self._idle.append(container)
                return
        self._destroy_later(container)

    def _destroy_later(self, container: _Container) -> None:
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
            files, collect = validate_request(req)
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
        deadline = time.monotonic() + START_TIMEOUT_S
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
        deadline = time.monotonic() + START_TIMEOUT_S
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
