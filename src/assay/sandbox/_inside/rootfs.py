"""The sandbox's file system: a read-only template built once, a fresh writable tmpfs per run.

The fork server moves into a private mount namespace and assembles, at ``mountpoint``, a
small read-only tmpfs holding read-only bind mounts of the runtime (``/usr`` ...), a minimal
``/etc`` and the four harmless device nodes. Each run copies that namespace (unshare), mounts
one size-capped tmpfs for ``/work``, ``/tmp`` and ``/dev/shm``, a fresh procfs for its PID
namespace, and pivots into it, detaching every host mount. Nothing the run writes outlives
its mount namespace.
"""

from __future__ import annotations

import os

from . import linux

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nnogroup:x:65534:\n"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
DEVICES = ("null", "zero", "random", "urandom", "full")


def _bind_ro(src: str, dst: str) -> None:
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "a"):
            pass
    linux.mount(src, dst, None, linux.MS_BIND | linux.MS_REC)
    linux.make_readonly(dst)


def build_template(root: str, ro_binds: list[str], etc_binds: list[str], userns: bool) -> None:
    """Run once in the fork server, inside its own private mount namespace."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount(
        "tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=4m,nr_inodes=8192,mode=755"
    )
    for d in ("proc", "dev", "dev/shm", "work", "tmp", ".rw", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for path in ro_binds:
        if not os.path.lexists(path):
            continue
        dst = root + path
        if os.path.islink(path):
            os.symlink(os.readlink(path), dst)
        elif os.path.isdir(path):
            _bind_ro(path, dst)
    etc = os.path.join(root, "etc")
    for name, text in (
        ("passwd", PASSWD),
        ("group", GROUP),
        ("hosts", HOSTS),
        ("hostname", "sandbox\n"),
    ):
        with open(os.path.join(etc, name), "w") as fh:
            fh.write(text)
    for name in etc_binds:
        src = os.path.join("/etc", name)
        if os.path.exists(src):
            _bind_ro(
                os.path.realpath(src) if not os.path.isdir(src) else src, os.path.join(etc, name)
            )
    dev = os.path.join(root, "dev")
    for name in DEVICES:
        target = os.path.join(dev, name)
        with open(target, "w"):
            pass
        linux.mount("/dev/" + name, target, None, linux.MS_BIND)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, os.path.join(dev, name))
    # The template itself becomes read-only: shared by every run, writable by none.
    linux.mount(
        None, root, None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
    )


def enter(root: str, disk_mb: int, uid: int, gid: int) -> None:
    """Run in each sandbox's init process (its own mount and PID namespaces, still root)."""
    rw = os.path.join(root, ".rw")
    linux.mount(
        "tmpfs",
        rw,
        "tmpfs",
        linux.MS_NOSUID | linux.MS_NODEV,
        f"size={disk_mb}m,nr_inodes=65536,mode=755",
    )
    for name, mode, owner in (("work", 0o755, uid), ("tmp", 0o1777, 0), ("shm", 0o1777, 0)):
        path = os.path.join(rw, name)
        os.mkdir(path)
        os.chmod(path, mode)
        if owner:
            os.chown(path, uid, gid)
    linux.mount(os.path.join(rw, "work"), os.path.join(root, "work"), None, linux.MS_BIND)
    linux.mount(os.path.join(rw, "tmp"), os.path.join(root, "tmp"), None, linux.MS_BIND)
    linux.mount(os.path.join(rw, "shm"), os.path.join(root, "dev/shm"), None, linux.MS_BIND)
    linux.umount2(rw, linux.MNT_DETACH)
    linux.mount(
        "proc",
        os.path.join(root, "proc"),
        "proc",
        linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
        "hidepid=2",
    )
    os.chdir(root)
    linux.pivot_root(".", ".")
    linux.umount2(".", linux.MNT_DETACH)
    os.chdir("/")


def write_files(files: list[tuple[str, bytes, int]], workdir: str, uid: int, gid: int) -> None:
    """Write the run's input files (paths already validated relative by the supervisor)."""
    for rel, content, mode in files:
        path = os.path.join(workdir, rel)
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            os.makedirs(parent, exist_ok=True)
            cur = parent
            while cur != workdir and cur.startswith(workdir):
                os.chown(cur, uid, gid)
                cur = os.path.dirname(cur)
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode & 0o777
        )
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fchown(fd, uid, gid)
            os.fchmod(fd, mode & 0o777)
        finally:
            os.close(fd)


def collect_files(paths: list[str], workdir: str, max_bytes: int) -> list[tuple[str, bytes, int]]:
    """Read requested files back, refusing symlinks anywhere in the path (hostile tree)."""
    out: list[tuple[str, bytes, int]] = []
    budget = max_bytes
    dirfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in paths:
            try:
                fd = linux.open_beneath(dirfd, rel, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                if not (st.st_mode & 0o170000 == 0o100000) or st.st_size > budget:
                    continue
                data = os.read(fd, st.st_size + 1)[: st.st_size]
                budget -= len(data)
                out.append((rel, data, st.st_mode & 0o777))
            finally:
                os.close(fd)
    finally:
        os.close(dirfd)
    return out
