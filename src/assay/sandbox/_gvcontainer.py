"""One started gVisor sandbox of the hardened tier's pool (``gvisor.GVisorSandbox``): its
``runsc run`` process in a host cgroup of its own, the exec server at its PID 1, and the
protocol of one run with it (a JSON message, then the files' and stdin's raw bytes; the
"staged" word; the answer, then stdout's, stderr's and the collected files' bytes)."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from typing import Any, Protocol, cast

from .. import defaults
from ..errors import SandboxError
from ..types import ExecResult, Status
from ._gvisor_wire import Stopped, recv, recv_bytes, relay, send, send_bytes, wait_answer
from ._inside import status as run_status
from ._run import RunRequest
from ._zygote import kill_and_reap
from .cgroups import CgroupBackend, CgroupLimits

_log = logging.getLogger(__name__)


class Pool(Protocol):
    """What a container needs of its pool (``gvisor.GVisorSandbox``)."""

    state: str
    cgroups: CgroupBackend | None
    seccomp: str
    seccomp_net: str

    def runsc_argv(self) -> list[str]: ...

    def spec(self, bundle: str) -> dict[str, Any]: ...


#: The sandbox's host cgroup while it starts (the Sentry, gofer and runsc themselves). A
#: start (~0.3 s of CPU) is the pool's own refill, done ahead of need: it runs at a
#: session's CPU weight, so a tenant whose sessions use up containers as fast as they can
#: be started does not take the CPU from judged runs at their full weight (each run arms
#: its own weight).
START_LIMITS = CgroupLimits(memory_bytes=1 << 30, pids=4096, cpu_weight=defaults.SESSION_CPU_WEIGHT)
#: What each container runs, twice, before its first run to measure what a run costs its
#: sandbox's host memory beyond the program's own: ``Container.overhead``.
#: At a session's CPU weight, as the container's start (``START_LIMITS``).
_CALIBRATION = RunRequest(
    "python",
    ["/work/main.py"],
    [("main.py", b"pass\n", 0o644)],
    cpu_weight=defaults.SESSION_CPU_WEIGHT,
)


@functools.cache
def _host_commit_bytes() -> int:
    """RAM and swap: the host kernel's heuristic overcommit refuses one allocation larger
    than that at once (``__vm_enough_memory``), and the default tier's programs see it so."""
    sizes = {}
    with open("/proc/meminfo") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "SwapTotal"):
                sizes[key] = int(rest.split()[0]) << 10
    return sizes.get("MemTotal", os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) + (
        sizes.get("SwapTotal", 0)
    )


def address_space(memory_mb: int, host_cgroup: bool) -> int:
    """The address space a Python run gets in gVisor (``RLIMIT_AS``; executables get no cap).

    gVisor's kernel maps any allocation, so without a cap ``[0] * 10**12`` would be an
    out-of-memory kill instead of the default tier's MemoryError. With a host cgroup to
    enforce the memory limit the cap is the host's RAM and swap, what the default tier's
    kernel refuses at once: not ``memory_mb``, which stopped a 32-thread pool from starting
    (each thread's stack reserves ``RLIMIT_STACK``) and turned a bomb's out-of-memory kill
    into a MemoryError the program could catch and go on. Without one (memory polled inside),
    ``memory_mb`` + 64 MiB: the cap then stops a fast allocation the poll would miss."""
    if host_cgroup:
        return _host_commit_bytes()
    return (memory_mb << 20) + (64 << 20)


def _join(fds: list[int]) -> None:
    """In the forked ``runsc run``, before exec: move into the sandbox's cgroup."""
    for fd in fds:
        os.write(fd, b"0")


class Container:
    """One started gVisor sandbox whose PID 1 is the exec server."""

    def __init__(self, owner: Pool) -> None:
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
        join = [os.dup(fd) for fd in self.cg.procs_fds()] if self.cg is not None else []
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
            setup = {"kind": "setup", "seccomp": owner.seccomp, "seccomp_net": owner.seccomp_net}
            send(self.wfd, setup)
        ready = recv(self.rfd, time.monotonic() + defaults.GVISOR_START_TIMEOUT_S)
        if ready is None or ready.get("kind") != "ready":
            err = self._stderr()
            self.destroy()
            raise SandboxError(f"gVisor sandbox did not start: {err or 'no answer'}")
        self.info = ready
        #: Host memory a run adds to its sandbox when its program adds none: the exec
        #: server's fork and the Sentry's own bookkeeping for a process (~8 MiB here, where
        #: the default tier's cgroup charges ~0.2-1 MiB). Each run's budget holds it on top
        #: of the run's ``memory_mb`` and its reported peak leaves it out, so a program
        #: within a few MiB of its limit gets the default tier's verdict (it got
        #: ``memory_limit`` here and ``ok`` there). Measured, as the smaller of two no-op
        #: runs (never more room than the cheapest run took), where the cgroup's peak can be
        #: reset per run; 0 elsewhere.
        self.overhead = 0
        if self.cg is not None and self.cg.peak_resets:
            try:
                costs = [self.run(_CALIBRATION) for _ in range(2)]
            except (SandboxError, OSError, ValueError, KeyError) as exc:  # as a failed start
                self.destroy()
                raise SandboxError(f"gVisor sandbox failed a no-op run: {exc}") from exc
            except BaseException:
                self.destroy()
                raise
            if any(c.status != "ok" for c in costs):
                why = "; ".join(f"{c.status}: {c.stderr[-200:]!r}" for c in costs)
                self.destroy()
                raise SandboxError(f"gVisor sandbox failed a no-op run: {why}")
            self.overhead = min(c.peak_memory_bytes for c in costs)
            self.runs = 0
        #: What the started sandbox holds on the host; a container that has grown past it
        #: by more than ``defaults.GVISOR_RETIRE_GROWTH_BYTES`` after a run is replaced.
        self.base = self.cg.usage_bytes() if self.cg is not None else 0

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def run(self, req: RunRequest) -> ExecResult:
        lim = req.limits
        msg: dict[str, Any] = {
            "mode": req.mode,
            "network": req.network,
            "argv": list(req.argv),
            # The bytes follow the message, files then stdin, as they are (no copy in JSON).
            "files": [[p, len(c), m] for p, c, m in req.files],
            "stdin_size": len(req.stdin),
            "env": dict(req.env),
            "collect": list(req.collect),
            "limits": {
                "time_s": lim.time_s,
                "wall_s": lim.effective_wall_s,
                "wall_explicit": lim.wall_s is not None,
                "memory_mb": lim.memory_mb,
                # The host cgroup enforces memory where there is one (a summed RSS would
                # count pages that forked processes share once per process).
                "poll_memory": self.cg is None,
                "address_space": address_space(lim.memory_mb, self.cg is not None),
                "processes": lim.processes,
                "output_bytes": lim.output_bytes,
                "file_bytes": lim.file_bytes,
                "disk_mb": lim.disk_mb,
                "collect_bytes": lim.disk_mb << 20,
                "cpu_poll_s": req.cpu_poll_s,
            },
        }
        self.runs += 1
        run_base = 0
        if self.cg is not None:
            run_base = self.cg.usage_bytes()
            budget = run_base + (lim.memory_mb << 20) + self.overhead
            self.cg.arm(CgroupLimits(budget, defaults.GVISOR_HOST_PIDS, req.cpu_weight))
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
        hard_wall = run_status.stretched_wall(lim.effective_wall_s, lim.wall_s is not None)
        deadline = started + hard_wall + defaults.GVISOR_ANSWER_GRACE_S
        # Closed when the run is over (answered, stopped or given up): the relays then stop
        # feeding the program and end once its side is drained, instead of waiting for the
        # caller to close its end (a session's channel stays open until its run's answer
        # is back: the session's end reason waited 5 s and read as a crash).
        over_r, over_w = os.pipe2(os.O_CLOEXEC) if req.pass_fds else (-1, -1)
        try:
            try:
                send(self.wfd, msg)
                for blob in [*(c for _p, c, _m in req.files), req.stdin]:
                    if not send_bytes(self.wfd, blob, deadline):
                        if self._out_of_memory():
                            return self._files_too_big(started)
                        raise SandboxError("gVisor sandbox stopped reading the run's files")
                for listener, fd in zip(listeners, req.pass_fds, strict=True):
                    listener.settimeout(defaults.GVISOR_START_TIMEOUT_S)
                    conn, _ = listener.accept()
                    pump = threading.Thread(
                        target=relay,
                        args=(conn, fd, os.dup(over_r)),
                        daemon=True,
                        name="assay-gvisor-fd",
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
                if over_r >= 0:
                    os.close(over_r)  # each relay has its own copy
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
        finally:
            if over_w >= 0:
                os.close(over_w)
        for pump in relays:  # (a stopped run's relays end with its sandbox)
            pump.join(timeout=5)
        if answer is None and self._out_of_memory():
            # The host kernel stopped the run at its memory limit: the sandbox went with it.
            assert self.cg is not None
            return ExecResult(
                status="memory_limit",
                signal=9,
                # Said, as for files that do not fit: nothing of the run's own output came
                # back (staging a binary larger than the limit ends here or there by timing).
                stderr=b"assay: the run was stopped at its memory limit\n",
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
        status = run_status.decide(
            kill_reason=answer["kill_reason"],
            reported=True,
            failed=False,
            oom=False,  # the host cgroup's OOM kill takes the whole sandbox (above)
            exit_code=answer["exit_code"],
            sig=answer["signal"],
            cpu_s=answer["cpu_s"],
            time_s=lim.time_s,
            stderr_tail=stderr[-run_status.MEMORY_ERROR_TAIL :],
        )
        return ExecResult(
            status=cast(Status, status),
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
        return max(0, self.cg.peak_memory_bytes() - run_base - self.overhead)

    def destroy(self) -> None:
        """Delete the container, then kill its sandbox, close its pipes and remove its
        bundle and cgroup: all of it even when ``runsc delete`` cannot be run (CI saw its
        spawn fail with EFAULT once; the rest of the cleanup was then skipped and the
        sandbox's processes and cgroup left behind)."""
        for attempt in range(2):
            try:
                subprocess.run(
                    [*self.owner.runsc_argv(), "delete", "-force", self.id],
                    capture_output=True,
                    timeout=30,
                    check=False,
                )
                break
            except subprocess.TimeoutExpired:
                break  # killed by run(); the sandbox is killed below
            except OSError as exc:
                if attempt:
                    _log.warning("runsc delete %s could not run: %s", self.id, exc)
        kill_and_reap(self.proc, 10)
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
        """Fewer than ``defaults.GVISOR_RUNS_PER_CONTAINER`` runs, alive, and not grown on the host (the Sentry keeps
        some freed memory: a run's budget is counted from what it holds at the start)."""
        if (
            self.dead
            or self.runs >= defaults.GVISOR_RUNS_PER_CONTAINER
            or self.proc.poll() is not None
        ):
            return False
        return (
            self.cg is None
            or self.cg.usage_bytes() <= self.base + defaults.GVISOR_RETIRE_GROWTH_BYTES
        )
