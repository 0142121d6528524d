"""The exec server inside a gVisor sandbox: PID 1 of the container, a warm interpreter.

Never imported on the host: its text (after ``pyrun``'s) is the container's ``python -c``
program. It reads requests from the container's stdin and answers on its stdout, both
length-prefixed JSON. Per request it wipes ``/work`` and ``/tmp``, writes the run's files,
forks the program (Python programs run in this warm interpreter through ``pyrun``;
executables are exec'd), which drops to uid 65534 with no capabilities, no_new_privs and
rlimits, and supervises it: output caps, CPU time of every process of the run (the gVisor
kernel's own accounting, read from its ``/proc``, and reaped children's), resident memory,
a wall backstop. Afterwards every process of the sandbox user is killed and reaped (this is
PID 1: orphans come here). Must run on Python 3.9+ (an image's interpreter).

The host supervisor trusts nothing the program says: this server is root in the gVisor
kernel, the program a different user who can neither signal nor trace it; the host also
kills the whole container if an answer does not come in time.
"""

from __future__ import annotations

import json
import math
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
from typing import Any

#: ``_inside/pyrun``, ``_gvkernel`` and ``_inside/status`` as modules, set by the loader
#: (``gvisor.server_program``).
pyrun: Any = None
gvkernel: Any = None
runstatus: Any = None
UID = 65534
WORK = "/work"
#: Where the host's relay sockets for a run's extra fds appear (a bind of the bundle's dir).
UDS = "/dev/.assay-uds"
POLL_S = 0.005
SCAN_S = 0.01
_CLK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _read_exact(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out


def _recv(fd: int) -> dict[str, Any]:
    (n,) = struct.unpack("<I", _read_exact(fd, 4))
    msg: dict[str, Any] = json.loads(_read_exact(fd, n))
    return msg


def _send(fd: int, msg: dict[str, Any]) -> None:
    data = json.dumps(msg, separators=(",", ":")).encode()
    data = struct.pack("<I", len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


def _run_pids() -> list[int]:
    """The run's processes (the gVisor kernel's view): every process but this server (PID
    1), whatever it did to its /proc entry (a non-dumpable process's is owned by root)."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and name != "1"]


def _usage(pids: list[int]) -> tuple[float, int, bool]:
    """CPU seconds and resident bytes of the live processes ``pids``, and whether one of
    them is running or runnable now (state R)."""
    cpu, rss, running = 0.0, 0, False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / _CLK
            rss += int(fields[21]) * _PAGE
            running = running or fields[0] == "R"
        except (OSError, IndexError, ValueError):
            pass
    return cpu, rss, running


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _kill_all() -> None:
    """Kill every process of the sandbox user (kill(-1) from a process of that user), then
    reap everything that died."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(UID)
            os.setuid(UID)
            for _ in range(3):
                os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            got, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if got == 0:
            if not _run_pids():
                try:
                    while os.waitpid(-1, os.WNOHANG)[0]:
                        pass
                except ChildProcessError:
                    pass
                return
            time.sleep(0.002)


def _child(
    req: dict[str, Any],
    stdin_fd: int,
    out_w: int,
    err_w: int,
    base_path: list[str],
    extra: list[int],
) -> None:
    lim = req["limits"]
    os.setsid()
    os.dup2(stdin_fd, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    # The caller's fds (3, 4, ...): sockets the host relays to its own ends.
    moved = [os.dup(fd) for fd in extra]
    for i, fd in enumerate(moved):
        os.dup2(fd, 3 + i, inheritable=True)
    cpu = max(1, int(lim["time_s"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
    if req["mode"] == "python":
        # The host said how much address space (``Container.run``): an allocation no host
        # could give fails at once (MemoryError), as the host kernel's overcommit check
        # makes it fail on the default tier, where this kernel would map it. Not for
        # executables: Go, the JVM and V8 reserve far more than they touch.
        mem = lim["address_space"]
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    gvkernel.kernel.confine_root()
    os.setgroups([])
    os.setgid(UID)
    os.setuid(UID)
    gvkernel.kernel.confine_user(req.get("network") == "loopback")
    os.chdir(WORK)
    for name in os.listdir("/proc/self/fd"):  # not closerange: a syscall per fd number
        if int(name) > 2 + len(extra):
            try:
                os.close(int(name))
            except OSError:
                pass
    if req["mode"] != "python":
        # This interpreter ignores these; an executable starts with the usual defaults.
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
    env = req["env"]
    os.environ.clear()
    os.environ.update(env)
    argv = req["argv"]
    if req["mode"] == "python":
        pyrun.run(argv[0], argv, base_path)
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"assay sandbox: cannot execute {argv[0]}: {exc.strerror}\n".encode())
    os._exit(127)


def _copy(src: int, dst: int, n: int) -> OSError | None:
    """Move ``n`` bytes from ``src`` to ``dst`` in chunks (never a whole file in memory);
    after a failed write the rest is still read, so the stream stays in step."""
    error = None
    while n:
        chunk = os.read(src, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        n -= len(chunk)
        view = memoryview(chunk)
        while view and error is None:
            try:
                view = view[os.write(dst, view) :]
            except OSError as exc:
                error = exc
    return error


def _stage(req: dict[str, Any], ctl_in: int) -> int:
    """Write the run's files (their bytes follow the request on ``ctl_in``, in order, then
    stdin's) and return stdin as a memfd."""
    error = None
    for rel, size, mode in req["files"]:
        path = os.path.join(WORK, rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(path, flags, mode & 0o777)
            os.fchown(fd, UID, UID)
        except OSError as exc:
            error, fd = error or exc, os.open("/dev/null", os.O_WRONLY)
        try:
            error = _copy(ctl_in, fd, size) or error
        finally:
            os.close(fd)
    stdin_fd = os.memfd_create("stdin", 0)
    error = _copy(ctl_in, stdin_fd, req["stdin_size"]) or error
    os.lseek(stdin_fd, 0, 0)
    if error is not None:
        os.close(stdin_fd)
        raise error
    for dirpath, dirnames, _files in os.walk(WORK):
        for name in dirnames:
            os.chown(os.path.join(dirpath, name), UID, UID)
    return stdin_fd


def _collect(paths: list[str], budget: int) -> list[tuple[str, int, int]]:
    """``(path, fd, size)`` of each regular file to return (sent after the answer)."""
    files = []
    for rel in paths:
        try:
            fd = os.open(os.path.join(WORK, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        st = os.fstat(fd)
        real = os.path.realpath(os.path.join(WORK, rel))
        if (
            st.st_mode & 0o170000 != 0o100000
            or st.st_size > budget
            or real != os.path.join(WORK, os.path.normpath(rel))  # through a symlinked dir
        ):
            os.close(fd)
            continue
        budget -= st.st_size
        files.append((rel, fd, st.st_size))
    return files


def _send_blobs(fd: int, blobs: list[tuple[int, int]]) -> None:
    """The bytes of each ``(fd, size)``, in order, after an answer; ``fd`` is closed."""
    for src, size in blobs:
        try:
            while size:
                chunk = os.read(src, min(size, 1 << 20))
                chunk = chunk or bytes(size)  # a file shrunk since: the size was promised
                size -= len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
        finally:
            os.close(src)


def run(
    req: dict[str, Any], base_path: list[str], writable: Any, ctl_in: int, ctl_out: int
) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """Run one request; the answer, and the ``(fd, size)`` blobs that follow it."""
    lim = req["limits"]
    writable.fresh(lim["disk_mb"])
    stdin_fd = _stage(req, ctl_in)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    extra = []
    for i in range(req.get("pass_fds", 0)):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(f"{UDS}/fd{i}.sock")
        extra.append(s.detach())
    _send(ctl_out, {"kind": "staged"})  # the host's memory verdicts tell set-up from run
    cpu0 = _children_cpu()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _child(req, stdin_fd, out_w, err_w, base_path, extra)
        finally:
            os._exit(127)
    for fd in (stdin_fd, out_w, err_w, *extra):
        os.close(fd)
    cap = lim["output_bytes"]
    bufs = {out_r: bytearray(), err_r: bytearray()}
    truncated = {out_r: False, err_r: False}
    reason = ""
    status = None
    cpu = peak = 0.0
    open_fds = [out_r, err_r]
    live: list[int] = [pid]
    interval, last_scan, next_scan = 0.0005, 0.0, 0.0
    # Each scan reads this kernel's /proc for every process of the run, paid in host CPU: a
    # scan every 10 ms made an idle session cost ~7 % of a core. As on the default tier,
    # the next is when the CPU limit could first be crossed, at most the request's
    # ``cpu_poll_s`` away (a session's agent asks for 0.5 s).
    scan_cap = max(SCAN_S, float(lim.get("cpu_poll_s") or SCAN_S))
    ncpu = max(1, os.cpu_count() or 1)
    # The same wall rule as the default tier: a program still computing at the default
    # backstop may run on to the stretch (its pace read from this kernel's CPU accounting).
    hard_wall = runstatus.stretched_wall(lim["wall_s"], lim["wall_explicit"])
    # This kernel charges CPU time in 10 ms ticks (a 3 ms burst counts as 10 ms), which
    # would make a mostly sleeping program look busy: its pace is sampled instead, as the
    # share of readings that find one of its processes running or runnable (R), from one
    # window before the backstop on.
    sample_from = started + max(0.0, lim["wall_s"] - runstatus.COMPUTING_WINDOW_S)
    window = runstatus.CpuWindow(sample_from)
    busy, was_running = 0.0, False
    while True:
        poller = select.poll()  # not select: no limit on the descriptors' numbers
        for fd in (*open_fds, ctl_in):
            poller.register(fd, select.POLLIN)
        wait = min(interval, next_scan - time.monotonic())
        if status is None:
            wait = min(wait, started + lim["wall_s"] - time.monotonic())
        ready = [fd for fd, _ in poller.poll(max(0, math.ceil(wait * 1000)))]
        if ctl_in in ready:
            # Nothing comes from the host during a run but the end of its pipe: the
            # supervisor is gone (killed, say). The run and this sandbox end with it.
            _kill_all()
            os._exit(0)
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if not data:
                open_fds.remove(fd)
                continue
            room = cap - len(bufs[fd])
            bufs[fd] += data[: max(0, room)]
            if len(data) > room:
                truncated[fd] = True
                reason = reason or "output"
        if status is None:
            got, wstatus = os.waitpid(pid, os.WNOHANG)
            if got == pid:
                status = wstatus
        now = time.monotonic()
        done = status is not None and not open_fds
        # The gVisor kernel's /proc is read when due (``next_scan``) and once at the end:
        # CPU time and memory of every process of the run, however it forked.
        if done or now >= next_scan:
            since, last_scan = now - last_scan, now
            live = _run_pids()
            used, rss, running = _usage(live)
            cpu = max(cpu, used + _children_cpu() - cpu0)
            peak = max(peak, rss)
            if now >= sample_from:
                # Busy when found running at two readings in a row: a short burst after a
                # sleep (lengthened by waiting for a host CPU) is not computing.
                busy += min(since, 2 * SCAN_S) if running and was_running else 0.0
                window.add(now, busy, 0.0)
            was_running = running
            if now >= sample_from or lim["poll_memory"]:
                next_scan = now + SCAN_S  # the pace's readings, or memory by its RSS
            else:
                ahead = runstatus.cpu_check_after(cpu, lim["time_s"], ncpu, SCAN_S, scan_cap)
                next_scan = min(now + ahead, max(sample_from, now + SCAN_S))
        if not reason:
            elapsed = now - started
            if cpu > lim["time_s"]:
                reason = "time"
            elif lim["poll_memory"] and peak > lim["memory_mb"] << 20:
                reason = "memory"
            elif status is None and elapsed >= lim["wall_s"]:  # (an ended program is not
                # stopped by the wall clock: the default tier's rule too)
                if elapsed >= hard_wall or not runstatus.on_course(
                    window.share(), cpu, lim["time_s"], now, started, hard_wall
                ):
                    reason = "wall"
        if reason:
            _kill_all()
            if status is None:
                try:
                    status = os.waitpid(pid, 0)[1]
                except ChildProcessError:
                    status = signal.SIGKILL
            break
        if status is not None:
            # The program is done: what it left running is killed and counted below, as
            # the default tier's init ends a run when its program exits.
            break
        # With its output open, the program's exit wakes the poll (EOF), and a long wait
        # costs nothing; once both are closed, its exit follows within moments and only
        # asking finds it: look every POLL_S at most.
        interval = min(interval * 2, scan_cap if open_fds else POLL_S)
    leftovers = len(_run_pids())
    if leftovers or open_fds:
        _kill_all()
    for fd in open_fds:
        while True:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            data = os.read(fd, 1 << 16) if poller.poll(0) else b""
            if not data:
                break
            room = cap - len(bufs[fd])
            bufs[fd] += data[: max(0, room)]
            truncated[fd] = truncated[fd] or len(data) > room
    for fd in (out_r, err_r):
        os.close(fd)
    wall = time.monotonic() - started
    cpu = max(cpu, _children_cpu() - cpu0)
    assert status is not None
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    files = _collect(req["collect"], lim["collect_bytes"])
    blobs = []
    for out in (out_r, err_r):
        fd = os.memfd_create("out", 0)
        rest = memoryview(bufs[out])
        while rest:
            rest = rest[os.write(fd, rest) :]
        os.lseek(fd, 0, 0)
        blobs.append((fd, len(bufs[out])))
    blobs += [(fd, size) for _rel, fd, size in files]
    answer = {
        # Facts, not a verdict: the host decides the status by the rule every tier uses.
        "kill_reason": reason or None,
        "exit_code": exit_code,
        "signal": sig,
        "stdout": len(bufs[out_r]),
        "stderr": len(bufs[err_r]),
        "stdout_truncated": truncated[out_r],
        "stderr_truncated": truncated[err_r],
        "cpu_s": round(cpu, 6),
        "wall_s": round(wall, 6),
        "peak_memory_bytes": int(peak),
        "leftover_processes": leftovers,
        "files": [[rel, size] for rel, _fd, size in files],
    }
    return answer, blobs


def main() -> None:
    ctl_in, ctl_out = os.dup(0), os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    base_path = [p for p in sys.path if p]
    for name in ("collections", "itertools", "functools", "math", "re", "json", "heapq"):
        __import__(name)
    pyrun.prebuild_streams()
    from importlib.util import MAGIC_NUMBER

    # The host's first message: the seccomp filter (not in the environment: PID 1's
    # /proc/1/environ is readable by the programs under gVisor, and stays empty).
    setup = _recv(ctl_in)
    kernel = gvkernel.kernel = gvkernel.Kernel(setup["seccomp"], setup.get("seccomp_net", ""))
    kernel.prctl(gvkernel.PR_SET_DUMPABLE, 0)  # no program reads this process's /proc files
    writable = gvkernel.Writable(kernel)

    _send(
        ctl_out,
        {
            "kind": "ready",
            "python": sys.version.split()[0],
            "bytecode_magic": MAGIC_NUMBER.hex(),
        },
    )
    while True:
        try:
            req = _recv(ctl_in)
        except EOFError:
            os._exit(0)
        blobs: list[tuple[int, int]] = []
        try:
            answer, blobs = run(req, base_path, writable, ctl_in, ctl_out)
        except BaseException as exc:
            answer = {"status": "sandbox_error", "error": f"{type(exc).__name__}: {exc}"}
            _kill_all()
        _send(ctl_out, answer)
        _send_blobs(ctl_out, blobs)
        writable.drop()  # nothing of the run stays until the next one
