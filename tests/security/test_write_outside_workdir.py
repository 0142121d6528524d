"""Claim: the program can write only to its own tmpfs (work dir, /tmp, /dev/shm), never the host.

Everything else is read-only or absent: creating, truncating, appending to, renaming,
deleting, chmod-ing, linking or mounting over files in ``/``, ``/usr``, ``/etc``, ``/bin``,
``/lib``, ``/dev`` and ``/proc/sys`` must all fail, and the host files the program aimed at
must be exactly as they were (content and metadata), with nothing new in the host directories.
"""

from __future__ import annotations

import hashlib
import json
import os

from assay import Limits, RunRequest

NAME = "assay-pwned"

ATTACK = r"""
import ctypes, json, os, sys

name = sys.argv[1]
done = []

def attempt(label, fn, *args):
    try:
        fn(*args)
        done.append(label)
    except OSError:
        pass

def write(path, mode):
    with open(path, mode) as fh:
        fh.write(b"pwned")

for d in ["/", "/usr", "/usr/bin", "/usr/lib", "/etc", "/bin", "/sbin", "/lib", "/dev", "/proc",
          "/proc/sys", "/proc/sys/kernel"]:
    attempt(f"create {d}", write, os.path.join(d, name), "wb")
    attempt(f"mkdir {d}", os.mkdir, os.path.join(d, name + ".d"))
    attempt(f"symlink {d}", os.symlink, "/work", os.path.join(d, name + ".ln"))
    attempt(f"mknod {d}", os.mknod, os.path.join(d, name + ".fifo"), 0o10644)
for f in ["/usr/bin/python3", "/bin/sh", "/etc/passwd", "/etc/hostname", "/etc/ld.so.cache",
          "/etc/localtime", "/lib/x86_64-linux-gnu/libc.so.6",
          "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern",
          "/proc/sys/kernel/domainname", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"]:
    for mode in ("r+b", "ab", "wb"):
        attempt(f"{mode} {f}", write, f, mode)
    attempt(f"truncate {f}", os.truncate, f, 0)
    attempt(f"chmod {f}", os.chmod, f, 0o777)
    attempt(f"utime {f}", os.utime, f, (0, 0))
    attempt(f"unlink {f}", os.unlink, f)
    attempt(f"rename {f}", os.rename, f, f + ".moved")
    attempt(f"hardlink {f}", os.link, f, "/work/" + os.path.basename(f))
for d in ["/usr", "/etc", "/"]:
    attempt(f"chown {d}", os.chown, d, 65534, 65534)
attempt("chown /work to root", os.chown, "/work", 0, 0)
libc = ctypes.CDLL(None, use_errno=True)
for target in [b"/usr", b"/etc", b"/"]:
    if libc.mount(b"tmpfs", target, b"tmpfs", 0, None) == 0:
        done.append(f"mount tmpfs on {target.decode()}")
    if libc.mount(None, target, None, 32 | 4096, None) == 0:  # MS_REMOUNT | MS_BIND, read-write
        done.append(f"remount {target.decode()} rw")
try:  # the work dir itself stays writable: the attacks above did not fail for lack of a disk
    write("/work/ok.txt", "wb")
    write("/tmp/ok.txt", "wb")
    write("/dev/null", "wb")
    done.append("work dir writable")
except OSError as exc:
    done.append(f"work dir not writable: {exc}")
print(json.dumps(done))
"""

WATCHED_FILES = [
    "/usr/bin/python3",
    "/bin/sh",
    "/etc/passwd",
    "/etc/shadow",
    "/etc/hostname",
    "/etc/ld.so.cache",
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/domainname",
]
WATCHED_DIRS = ["/", "/usr", "/usr/bin", "/usr/lib", "/etc", "/bin", "/sbin", "/lib", "/dev"]


def _snapshot() -> dict[str, object]:
    snap: dict[str, object] = {}
    for path in WATCHED_FILES:
        if os.path.exists(path):
            st = os.stat(path)
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            snap[path] = (digest, st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns)
    return snap


def test_writes_outside_the_work_dir_fail(runner) -> None:  # type: ignore[no-untyped-def]
    before = _snapshot()
    result = runner.sandbox.execute(
        RunRequest(
            "python",
            ["/work/main.py", NAME],
            [("main.py", ATTACK.encode(), 0o644)],
            limits=Limits(time_s=5),
        )
    )
    after = _snapshot()

    assert result.status == "ok", (result.status, result.stderr[-2000:])
    done = json.loads(result.stdout)
    assert done == ["work dir writable"], f"writes that succeeded: {done}"
    assert after == before, "host files changed"
    for path in WATCHED_DIRS:  # other processes may change these listings, but not our names
        planted = [entry for entry in os.listdir(path) if NAME in entry]
        assert planted == [], f"created on the host in {path}: {planted}"
