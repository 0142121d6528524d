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

import base64
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
from typing import Any

#: ``_inside/pyrun`` as a module, set by the loader (``gvisor.server_program``).
pyrun: Any = None
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


def _wipe(path: str) -> None:
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            _wipe(entry.path)
            os.rmdir(entry.path)
        else:
            os.unlink(entry.path)


class _Writable:
    """Each run's /work, /tmp and /dev/shm: one fresh tmpfs of the run's ``disk_mb`` (as in
    the default tier: the three share the run's disk budget, and a write past it fails with
    ENOSPC), detached after the run, so nothing of one run is seen by the next.

    Mounting needs the C library through ``ctypes``; an image whose Python lacks it gets the
    container's fixed tmpfs mounts, wiped per run (``per_run`` False: the host refuses a
    non-default ``disk_mb`` there)."""

    RW = "/dev/.assay-rw"
    DIRS = ((WORK, "work", 0o755), ("/tmp", "tmp", 0o1777), ("/dev/shm", "shm", 0o1777))
    MS_NOSUID, MS_NODEV, MS_BIND, MNT_DETACH = 2, 4, 4096, 2

    def __init__(self) -> None:
        self.mounted = False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            self.mount = libc.mount
            self.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
            self.umount2 = libc.umount2
            self.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
            self._errno = ctypes.get_errno
            self.per_run = True
        except (ImportError, OSError, AttributeError):
            self.per_run = False

    def _check(self, ret: int, what: str) -> None:
        if ret != 0:
            err = self._errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def fresh(self, disk_mb: int) -> None:
        self.drop()
        if not self.per_run:
            for path, _name, _mode in self.DIRS:
                _wipe(path)
            os.chown(WORK, UID, UID)
            os.chmod("/dev/shm", 0o1777)
            return
        os.makedirs(self.RW, exist_ok=True)
        flags = self.MS_NOSUID | self.MS_NODEV
        opts = f"size={int(disk_mb)}m,mode=755".encode()
        self._check(self.mount(b"tmpfs", self.RW.encode(), b"tmpfs", flags, opts), "mount")
        try:
            for target, name, mode in self.DIRS:
                path = f"{self.RW}/{name}"
                os.mkdir(path)
                os.chmod(path, mode)
                if target == WORK:
                    os.chown(path, UID, UID)
                self._check(self.mount(path.encode(), target.encode(), None, self.MS_BIND, None), target)
                self.mounted = True
        finally:
            self._check(self.umount2(self.RW.encode(), self.MNT_DETACH), "umount")

    def drop(self) -> None:
        """Detach the run's tmpfs (its content goes with the last reference), or wipe."""
        if not self.per_run:
            for path, _name, _mode in self.DIRS:
                _wipe(path)
            return
        if self.mounted:
            for target, _name, _mode in self.DIRS:
                self.umount2(target.encode(), self.MNT_DETACH)  # one not mounted: EINVAL
            self.mounted = False


def _run_pids() -> list[int]:
    """The sandbox user's processes (the gVisor kernel's view)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat("/proc/" + name).st_uid == UID:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def _usage(pids: list[int]) -> tuple[float, int]:
    """CPU seconds and resident bytes of the live processes ``pids``."""
    cpu, rss = 0.0, 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / _CLK
            rss += int(fields[21]) * _PAGE
        except (OSError, IndexError, ValueError):
            pass
    return cpu, rss


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
        # Python reserves little address space beyond what it uses: an allocation past the
        # limit fails at once (MemoryError). Not for executables: Go and the JVM reserve
        # far more than they touch; their resident memory is what is polled.
        mem = (lim["memory_mb"] << 20) + (64 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    os.setgroups([])
    os.setgid(UID)
    os.setuid(UID)
    os.chdir(WORK)
    for name in os.listdir("/proc/self/fd"):  # not closerange: a syscall per fd number
        if int(name) > 2 + len(extra):
            try:
                os.close(int(name))
            except OSError:
                pass
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


def _write_files(req: dict[str, Any]) -> None:
    for rel, data, mode in req["files"]:
        path = os.path.join(WORK, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode & 0o777)
        try:
            os.write(fd, base64.b64decode(data))
            os.fchown(fd, UID, UID)
        finally:
            os.close(fd)
    for dirpath, dirnames, _files in os.walk(WORK):
        for name in dirnames:
            os.chown(os.path.join(dirpath, name), UID, UID)


def _collect(paths: list[str], budget: int) -> dict[str, Any]:
    files = {}
    for rel in paths:
        try:
            fd = os.open(os.path.join(WORK, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if st.st_mode & 0o170000 != 0o100000 or st.st_size > budget:
                continue
            if os.path.realpath(os.path.join(WORK, rel)) != os.path.join(
                WORK, os.path.normpath(rel)
            ):
                continue  # a directory of the path was a symlink
            data = os.read(fd, st.st_size)
            budget -= len(data)
            files[rel] = base64.b64encode(data).decode()
        finally:
            os.close(fd)
    return files


def run(req: dict[str, Any], base_path: list[str], writable: _Writable) -> dict[str, Any]:
    lim = req["limits"]
    writable.fresh(lim["disk_mb"])
    _write_files(req)
    stdin_fd = os.memfd_create("stdin", 0)
    os.write(stdin_fd, base64.b64decode(req["stdin"]))
    os.lseek(stdin_fd, 0, 0)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    extra = []
    for i in range(req.get("pass_fds", 0)):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(f"{UDS}/fd{i}.sock")
        extra.append(s.detach())
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
    interval, last_scan = 0.0005, 0.0
    while True:
        ready = select.select(open_fds, [], [], interval)[0] if open_fds else []
        if not open_fds:
            time.sleep(interval)
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
        # The gVisor kernel's /proc is read every SCAN_S (and once at the end): CPU time
        # and memory of every process of the run, however it forked.
        if done or now - last_scan >= SCAN_S:
            last_scan = now
            live = _run_pids()
            used, rss = _usage(live)
            cpu = max(cpu, used + _children_cpu() - cpu0)
            peak = max(peak, rss)
        if not reason:
            if cpu >= lim["time_s"]:
                reason = "time"
            elif lim["poll_memory"] and peak > lim["memory_mb"] << 20:
                reason = "memory"
            elif now - started >= lim["wall_s"]:
                reason = "wall"
        if reason:
            _kill_all()
            if status is None:
                try:
                    status = os.waitpid(pid, 0)[1]
                except ChildProcessError:
                    status = signal.SIGKILL
            break
        if done or (status is not None and not live and not ready):
            # Gone, or a pipe is still held open: only by a leftover of the run.
            break
        interval = min(interval * 2, POLL_S)
    leftovers = len(_run_pids())
    if leftovers or open_fds:
        _kill_all()
    for fd in open_fds:
        while True:
            r = select.select([fd], [], [], 0)[0]
            data = os.read(fd, 1 << 16) if r else b""
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
    if reason == "time" or reason == "wall" or sig == signal.SIGXCPU:
        verdict = "time_limit"
    elif reason == "memory" or (exit_code != 0 and b"MemoryError" in bufs[err_r][-4096:]):
        verdict = "memory_limit"
    elif reason == "output":
        verdict = "output_limit"
    elif exit_code == 0:
        verdict = "ok"
    else:
        verdict = "runtime_error"
    files = _collect(req["collect"], lim["collect_bytes"])
    writable.drop()  # nothing of the run stays until the next one
    return {
        "status": verdict,
        "exit_code": exit_code,
        "signal": sig,
        "stdout": base64.b64encode(bytes(bufs[out_r])).decode(),
        "stderr": base64.b64encode(bytes(bufs[err_r])).decode(),
        "stdout_truncated": truncated[out_r],
        "stderr_truncated": truncated[err_r],
        "cpu_s": round(cpu, 6),
        "wall_s": round(wall, 6),
        "peak_memory_bytes": int(peak),
        "leftover_processes": leftovers,
        "files": files,
    }


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

    writable = _Writable()

    _send(
        ctl_out,
        {
            "kind": "ready",
            "python": sys.version.split()[0],
            "bytecode_magic": MAGIC_NUMBER.hex(),
            "per_run_disk": writable.per_run,
        },
    )
    while True:
        try:
            req = _recv(ctl_in)
        except EOFError:
            os._exit(0)
        try:
            answer = run(req, base_path, writable)
        except BaseException as exc:
            answer = {"status": "sandbox_error", "error": f"{type(exc).__name__}: {exc}"}
            _kill_all()
        _send(ctl_out, answer)
