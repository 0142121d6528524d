"""The sandbox's file system: a read-only template built once, a fresh writable tmpfs per run.

The fork server moves into a private mount namespace and assembles, at ``mountpoint``, a
small read-only tmpfs holding read-only bind mounts of the runtime (``/usr`` ...), a minimal
``/etc`` and the four harmless device nodes. Each run copies that namespace (unshare), mounts
one size-capped tmpfs for ``/work``, ``/tmp`` and ``/dev/shm``, a fresh procfs for its PID
namespace, and pivots into it, detaching every host mount. Nothing the run writes outlives
its mount namespace.
"""

from __future__ import annotations

import json
import os
import stat

from . import linux

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n"
)
GROUP = "root:x:0:\nnogroup:x:65534:\n"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
DEVICES = ("null", "zero", "random", "urandom", "full")


def _bind_ro(src: str, dst: str, is_dir: bool | None = None) -> None:
    if os.path.isdir(src) if is_dir is None else is_dir:
        os.makedirs(dst, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "a"):
            pass
    linux.mount(src, dst, None, linux.MS_BIND | linux.MS_REC)
    linux.make_readonly(dst)


#: The exec-mode launcher's path inside the sandbox root.
LAUNCHER = "/.assay-launch"


def _bind_image_path(top: int, path: str, dst: str, in_root: bool) -> None:
    """Bind ``path`` of an image (the fork server's ``/``, ``top``) at ``dst``, from a
    descriptor: an image is untrusted, and this view holds the fork server's own procfs and
    device nodes, which a link such as ``etc/alternatives -> /dev`` would otherwise hand to
    every program. ``in_root``: links resolve as if the image were ``/`` and never into
    another mount (an ``/etc`` entry may be a link within the image: ``localtime``);
    otherwise no link is followed and a last component that is one is copied as a link (it
    resolves in the sandbox's view, which holds nothing of the host). What cannot be reached
    so is left out."""
    try:
        if in_root:
            fd = linux.open_in_root(top, path.lstrip("/"), os.O_PATH)
        else:
            fd = linux.open_beneath(top, path.lstrip("/"), os.O_PATH | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.symlink(os.readlink("", dir_fd=fd), dst)
        elif stat.S_ISDIR(mode) or (in_root and stat.S_ISREG(mode)):
            _bind_ro(f"/proc/self/fd/{fd}", dst, stat.S_ISDIR(mode))
    finally:
        os.close(fd)


def build_template(
    root: str,
    ro_binds: list[str],
    etc_binds: list[str],
    userns: bool,
    launcher: bytes | None,
    image: bool = False,
) -> None:
    """Run once in the fork server, inside its own private mount namespace. ``image``: the
    fork server's ``/`` is a task image (untrusted: see :func:`_bind_image_path`)."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    top = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if image else -1
    try:
        _fill_template(root, ro_binds, etc_binds, top)
    finally:
        if top >= 0:
            os.close(top)
    _finish_template(root, launcher)


def _fill_template(root: str, ro_binds: list[str], etc_binds: list[str], top: int) -> None:
    linux.mount(
        "tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=4m,nr_inodes=8192,mode=755"
    )
    for d in ("proc", "dev", "dev/shm", "work", "tmp", ".rw", ".slot", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for path in ro_binds:
        if top >= 0:
            _bind_image_path(top, path, root + path, in_root=False)
            continue
        if not os.path.lexists(path):  # the host's runtime: trusted
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
        if top >= 0:
            _bind_image_path(top, src, os.path.join(etc, name), in_root=True)
        elif os.path.exists(src):
            _bind_ro(
                os.path.realpath(src) if not os.path.isdir(src) else src, os.path.join(etc, name)
            )


def _finish_template(root: str, launcher: bytes | None) -> None:
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
    if launcher is not None:
        # Root-only: the program processes (the sandbox user) can neither read nor run it.
        fd = os.open(root + LAUNCHER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        try:
            view = memoryview(launcher)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    # The template itself becomes read-only: shared by every run, writable by none.
    linux.mount(
        None, root, None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
    )


def enter(root: str) -> None:
    """Run once in each slot's init (own mount and PID namespaces, still root)."""
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
    mask_proc()


#: /proc files that describe the host rather than the run (boot command line, kernel
#: configuration and symbols, boot id, keys, timers, scheduler state): each is covered by an
#: empty, read-only file. Directories of host hardware get an empty read-only tmpfs.
MASKED_PROC_FILES = (
    "cmdline",
    "config.gz",
    "bootconfig",
    "kallsyms",
    "modules",
    "kcore",
    "keys",
    "key-users",
    "timer_list",
    "sched_debug",
    "latency_stats",
    "sysrq-trigger",
    "sys/kernel/random/boot_id",
)
MASKED_PROC_DIRS = ("acpi", "asound", "scsi", "driver")


def mask_proc() -> None:
    """Cover :data:`MASKED_PROC_FILES` and :data:`MASKED_PROC_DIRS` (in the slot's own
    procfs, after ``pivot_root``)."""
    for name in MASKED_PROC_FILES:
        path = "/proc/" + name
        if os.path.exists(path):
            # /dev/null itself: reads are empty, writes vanish (no read-only remount needed).
            linux.mount("/dev/null", path, None, linux.MS_BIND)
    for name in MASKED_PROC_DIRS:
        path = "/proc/" + name
        if os.path.isdir(path):
            linux.mount(
                "tmpfs",
                path,
                "tmpfs",
                linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
                "size=4k,nr_inodes=1,mode=555",
            )


def slot_accounts(uid: int, gid: int) -> None:
    """Give the slot's own user a name: ``/etc/passwd`` and ``/etc/group`` of this slot,
    read-only, naming ``uid``/``gid`` as ``sandbox`` (tools that look their user up, such as
    ``whoami`` or ``getpass``, then work). Run once in each slot's init, after ``enter``."""
    if uid == 65534 and gid == 65534:
        return  # the template's own files already name it (nobody)
    linux.mount(
        "tmpfs",
        "/.slot",
        "tmpfs",
        linux.MS_NOSUID | linux.MS_NODEV,
        "size=16k,nr_inodes=8,mode=755",
    )
    for name, text in (
        ("passwd", PASSWD + f"sandbox:x:{uid}:{gid}:sandbox:/tmp:/usr/sbin/nologin\n"),
        ("group", GROUP + f"sandbox:x:{gid}:\n"),
    ):
        with open("/.slot/" + name, "w") as fh:
            fh.write(text)
        linux.mount("/.slot/" + name, "/etc/" + name, None, linux.MS_BIND)
        linux.make_readonly("/etc/" + name)
    linux.umount2("/.slot", linux.MNT_DETACH)  # the two bind mounts keep what they need


WRITABLE = (("/work", "work"), ("/tmp", "tmp"), ("/dev/shm", "shm"))
#: Where each run's tmpfs is mounted while its places are made, before they are bound over
#: the template's writable places.
STAGE = "/.rw"


def places() -> list[tuple[str, str, int, bool]]:
    """The places of a run's tmpfs: (name in it, where it is bound, mode, owned by the
    slot's user). The run's own directory is the user's; /tmp and /dev/shm are sticky."""
    modes = {"work": (0o755, True), "tmp": (0o1777, False), "shm": (0o1777, False)}
    return [(name, target, *modes[name]) for target, name in WRITABLE]


def tmpfs_options(disk_mb: int) -> str:
    return f"size={disk_mb}m,nr_inodes=65536,mode=755"


def fresh_rw(disk_mb: int, uid: int, gid: int) -> None:
    """Mount one new size-capped tmpfs and expose it as /work, /tmp and /dev/shm (the same
    steps as launcher.c's ``assay_reset``, which the slot's init uses when it can)."""
    linux.mount("tmpfs", STAGE, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, tmpfs_options(disk_mb))
    try:
        for name, target, mode, owned in places():
            path = f"{STAGE}/{name}"
            os.mkdir(path)
            os.chmod(path, mode)
            if owned:
                os.chown(path, uid, gid)
            linux.mount(path, target, None, linux.MS_BIND)
    finally:
        linux.umount2(STAGE, linux.MNT_DETACH)


def drop_rw() -> None:
    """Detach the run's writable tmpfs: its content is gone once no process holds it."""
    for target, _name in WRITABLE:
        try:
            linux.umount2(target, linux.MNT_DETACH)
        except OSError:
            pass


def resize_rw(disk_mb: int) -> None:
    linux.mount(
        None, "/work", None, linux.MS_REMOUNT | linux.MS_NOSUID | linux.MS_NODEV, f"size={disk_mb}m"
    )


def write_files(
    contents_fd: int, entries: list[tuple[str, int, int]], workdir: str, uid: int, gid: int
) -> None:
    """Write a run's input files (``(path, size, mode)``, contents back to back in
    ``contents_fd``), kernel to kernel.

    Only names and sizes enter this process's memory; contents move with sendfile, so the
    slot's init, of which every later program is a fork, never holds a run's data. Paths
    were validated relative by the supervisor; O_EXCL|O_NOFOLLOW and a fresh tmpfs keep even
    a bad one from escaping.
    """
    offset = 0
    for rel, size, mode in entries:
        mode &= 0o777
        path = os.path.join(workdir, rel)
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            os.makedirs(parent, exist_ok=True)
            cur = parent
            while cur != workdir and cur.startswith(workdir):
                os.chown(cur, uid, gid)
                cur = os.path.dirname(cur)
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
        )
        try:
            left, pos = size, offset
            while left > 0:
                n = os.sendfile(fd, contents_fd, pos, left)
                if n <= 0:
                    raise OSError(f"short input file {rel}")
                left -= n
                pos += n
            os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        offset += size


def collect_files(paths: list[str], workdir: str, max_bytes: int) -> int:
    """Copy requested files into a memfd archive, kernel to kernel.

    Symlinks anywhere in a path are refused (the tree is hostile). The content never passes
    through this process's memory: the slot's init lives on, and every later run is a fork
    of it, so nothing a run produced may linger in its heap.
    """
    entries: list[tuple[str, int, int, int]] = []  # path, fd, size, mode
    budget = max_bytes
    dirfd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for rel in paths:
            try:
                fd = linux.open_beneath(dirfd, rel, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                continue
            st = os.fstat(fd)
            if st.st_mode & 0o170000 != 0o100000 or st.st_size > budget:
                os.close(fd)
                continue
            budget -= st.st_size
            entries.append((rel, fd, st.st_size, st.st_mode & 0o777))
        index = [{"path": p, "size": n, "mode": m} for p, _fd, n, m in entries]
        head = json.dumps(index, separators=(",", ":")).encode()
        out = os.memfd_create("collected", os.MFD_CLOEXEC)
        os.write(out, str(len(head)).encode() + b"\n" + head)
        for _p, fd, size, _m in entries:
            left = size
            while left > 0:
                n = os.sendfile(out, fd, None, left)
                if n <= 0:
                    break
                left -= n
            if left:  # file shrank under us: keep the archive's framing intact
                os.write(out, b"\0" * left)
        return out
    finally:
        os.close(dirfd)
        for _p, fd, _n, _m in entries:
            os.close(fd)
