"""Applying an image layer (a tar stream) to a root file system being assembled, safely.

The archive is untrusted: its member names may try to leave the root (an absolute name,
``..``, a path through a symlink the archive itself planted, in this layer or a lower one),
its members may be device nodes, its files may be set-uid, and it may expand without bound.
The importer runs as root, so one write, chmod or link through a planted symlink would act
on a host file. Hence:

- Every member is checked before anything is written (names, kinds), and the layer is
  *settled* first: a later member of the same name replaces an earlier one (its children
  too, when it is not a directory), so nothing is written that a later member undoes, and a
  member beneath a file or symlink of the same layer is refused as contradictory.
- Every operation acts on what the importer made, by descriptor: directories are walked
  one component at a time with ``O_NOFOLLOW`` (:func:`assay._fs.open_dir_beneath`), files
  are created ``O_EXCL|O_NOFOLLOW`` relative to their parent's descriptor and their mode
  set with ``fchmod``; directory modes (applied after the layer, so a 0555 directory still
  takes its files) are set on a descriptor walked the same way, never by path.
- Hard links must name a regular file already inside the root, reached the same way.
- Device nodes are refused and set-uid/set-gid bits dropped (the store is on the host).
- A :class:`Budget` caps what all layers of one image expand to
  (:data:`assay.defaults.IMAGE_MAX_BYTES`, ``IMAGE_MAX_ENTRIES``), checked from the headers
  as they are read, before a member's data is.

Whiteouts follow the OCI image spec: ``.wh.NAME`` deletes ``NAME`` of the lower layers,
``.wh..wh..opq`` empties its directory of the lower layers' entries; both apply before the
layer's own entries. Across layers a non-directory replaces whatever was there, and a
directory over a directory merges. Nothing from the image is executed.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterable
from typing import IO

from .._fs import open_dir_beneath, remove_at
from ..errors import ValidationError

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
#: Mode bits kept from the archive: permissions and the sticky bit, never set-uid/set-gid.
MODE_MASK = 0o1777
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def member_path(field: str, name: str) -> str:
    """The member's path relative to the root, or ValidationError for an absolute name, a
    ``..`` component or a NUL."""
    if "\x00" in name:
        raise ValidationError(field, f"archive member {name!r} contains a NUL byte")
    if name.startswith("/"):
        raise ValidationError(field, f"archive member {name!r} is an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValidationError(field, f"archive member {name!r} contains '..'")
    return "/".join(parts)


class Budget:
    """What the layers of one image may still expand to: bytes of file data and entries.
    Shared by all layers of an import, checked from each header before its data is read."""

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.bytes = self.entries = 0

    def take(self, field: str, m: tarfile.TarInfo) -> None:
        self.entries += 1
        self.bytes += max(m.size, 0) if m.isreg() else 0
        if self.bytes > self.max_bytes:
            gib = f", {self.max_bytes / (1 << 30):.1f} GiB" if self.max_bytes >= 1 << 30 else ""
            raise ValidationError(
                field,
                f"the image expands past the import cap of {self.max_bytes} bytes{gib} "
                "(--max-bytes raises it): refused",
            )
        if self.entries > self.max_entries:
            raise ValidationError(
                field, f"the image holds more than the import cap of {self.max_entries} entries"
            )


def check_member(field: str, m: tarfile.TarInfo) -> str:
    """The member's relative path, once its name, kind and link target are checked."""
    rel = member_path(field, m.name)
    if m.ischr() or m.isblk():
        raise ValidationError(field, f"archive member {m.name!r} is a device node")
    if not (m.isreg() or m.isdir() or m.issym() or m.islnk() or m.isfifo()):
        raise ValidationError(field, f"archive member {m.name!r} has an unsupported type")
    if m.islnk() and not member_path(field, m.linkname):
        raise ValidationError(field, f"archive member {m.name!r} is a hard link to the root")
    return rel


def settle(
    field: str, members: Iterable[tarfile.TarInfo]
) -> tuple[list[str], dict[str, tarfile.TarInfo]]:
    """The layer's whiteouts (relative paths) and its entries as they end up: one member per
    path (the last of that name, kept at the first one's place so that a hard link written
    after it finds it), without the members a later non-directory of the same layer replaces.
    A member beneath a non-directory of the same layer is refused: writing it would mean
    following (or replacing) what the layer itself just made."""
    whiteouts: list[str] = []
    entries: dict[str, tarfile.TarInfo] = {}
    holders: set[str] = set()  # paths some entry is beneath (a scan for children is rare)
    for m in members:
        rel = check_member(field, m)
        if not rel:
            continue  # the root itself: its mode is the store's
        if rel.rsplit("/", 1)[-1].startswith(WHITEOUT):
            whiteouts.append(rel)
            continue
        parts = rel.split("/")
        for i in range(1, len(parts)):
            above = entries.get("/".join(parts[:i]))
            if above is not None and not above.isdir():
                raise ValidationError(
                    field,
                    f"archive member {m.name!r} is beneath {above.name!r}, which the same "
                    "layer makes a link or a file",
                )
        if not m.isdir() and rel in holders:
            prefix = rel + "/"
            for gone in [k for k in entries if k.startswith(prefix)]:
                del entries[gone]
        holders.update("/".join(parts[:i]) for i in range(1, len(parts)))
        entries[rel] = m
    return whiteouts, entries


class _Tree:
    """The root being assembled, reached only by descriptors (see the module docstring)."""

    def __init__(self, field: str, root: str) -> None:
        self.field = field
        self.fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def close(self) -> None:
        os.close(self.fd)

    def parent(self, rel: str, create: bool) -> tuple[int | None, str]:
        """A descriptor of ``rel``'s parent (None: it is missing or not a directory, and
        ``create`` is False) and ``rel``'s last component."""
        parts = rel.split("/")
        return open_dir_beneath(self.fd, parts[:-1], create), parts[-1]

    def whiteout(self, rel: str) -> None:
        pfd, base = self.parent(rel, create=False)
        if pfd is None:
            return
        try:
            if base == OPAQUE:
                for entry in os.listdir(pfd):
                    remove_at(pfd, entry)
            else:
                remove_at(pfd, base[len(WHITEOUT) :])
        finally:
            os.close(pfd)

    def write(self, tar: tarfile.TarFile, rel: str, m: tarfile.TarInfo) -> None:
        pfd, name = self.parent(rel, create=True)
        assert pfd is not None
        try:
            if m.isdir():
                try:
                    st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                    keep = stat.S_ISDIR(st.st_mode)
                except FileNotFoundError:
                    keep = False
                if not keep:
                    remove_at(pfd, name)
                    os.mkdir(name, 0o755, dir_fd=pfd)
                return
            remove_at(pfd, name)
            mode = m.mode & MODE_MASK
            if m.isreg():
                src = tar.extractfile(m)
                assert src is not None
                fd = os.open(name, _FILE_FLAGS, 0o600, dir_fd=pfd)
                with os.fdopen(fd, "wb") as out:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
                    os.fchmod(out.fileno(), mode)
            elif m.issym():
                os.symlink(m.linkname, name, dir_fd=pfd)
            elif m.islnk():
                self._link(m, pfd, name)
            elif m.isfifo():
                os.mkfifo(name, 0o600, dir_fd=pfd)
                fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=pfd)
                try:
                    os.fchmod(fd, mode)
                finally:
                    os.close(fd)
        finally:
            os.close(pfd)

    def _link(self, m: tarfile.TarInfo, dst_fd: int, dst: str) -> None:
        """A hard link to a regular file already in the root (reached without links)."""
        tfd, tname = self.parent(member_path(self.field, m.linkname), create=False)
        try:
            st = os.stat(tname, dir_fd=tfd, follow_symlinks=False) if tfd is not None else None
        except FileNotFoundError:
            st = None
        try:
            if tfd is None or st is None or not stat.S_ISREG(st.st_mode):
                raise ValidationError(
                    self.field,
                    f"archive member {m.name!r} links to {m.linkname!r}, not a file of the image",
                )
            os.link(tname, dst, src_dir_fd=tfd, dst_dir_fd=dst_fd, follow_symlinks=False)
        finally:
            if tfd is not None:
                os.close(tfd)

    def chmod_dir(self, rel: str, mode: int) -> None:
        fd = open_dir_beneath(self.fd, rel.split("/"))
        if fd is None:  # settle() guarantees it is there; refuse rather than guess
            raise ValidationError(self.field, f"directory {rel!r} vanished while importing")
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def apply_layer(field: str, root: str, fileobj: IO[bytes], budget: Budget) -> int:
    """Apply one layer (any compression ``tarfile`` detects) to ``root``; returns how many
    entries were written. Every member is read, checked and counted against ``budget``
    before the first write."""
    with tarfile.open(fileobj=fileobj, mode="r:*") as tar:
        members = []
        for m in tar:  # lazily: a bomb is refused at the header that crosses the cap
            budget.take(field, m)
            members.append(m)
        whiteouts, entries = settle(field, members)
        tree = _Tree(field, root)
        try:
            for rel in whiteouts:  # they refer to lower layers only: before this layer's files
                tree.whiteout(rel)
            for rel, m in entries.items():
                tree.write(tar, rel, m)
            for rel, m in reversed(entries.items()):  # children first; 0555 dirs took theirs
                if m.isdir():
                    tree.chmod_dir(rel, m.mode & MODE_MASK)
        finally:
            tree.close()
    return len(entries)


#: The image's own mount points, which the sandbox covers with file systems of its own: a
#: link into them is a link to whatever the fork server mounted there.
_COVERED = ("proc", "dev", "sys")


def resolve_in_root(root_fd: int, rel: str) -> list[str] | None:
    """The components of ``rel`` resolved as if ``root_fd`` were ``/``: links followed
    inside the tree only (an absolute target restarts at the root, ``..`` stops there),
    a missing tail kept as written; None for a loop (over 40 links)."""
    todo = [p for p in rel.split("/") if p not in ("", ".")]
    done: list[str] = []
    links = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            done = done[:-1]
            continue
        parent = open_dir_beneath(root_fd, done)
        if parent is None:  # a missing or non-directory component: nothing further to follow
            return [*done, part, *todo]
        try:
            target = os.readlink(part, dir_fd=parent)
        except OSError:  # not a link, or missing
            target = None
        finally:
            os.close(parent)
        if target is None:
            done.append(part)
            continue
        links += 1
        if links > 40:
            return None
        if target.startswith("/"):
            done = []
        todo = [p for p in target.split("/") if p not in ("", ".")] + todo
    return done


def neutralise_links(root: str, paths: Iterable[str]) -> list[str]:
    """Remove the link on the way to each of ``paths`` (the sources the sandbox binds from
    an image: its ``/etc`` entries and runtime directories) that leads into ``/proc``,
    ``/dev`` or ``/sys`` or loops; returns the links removed. The sandbox resolves these
    paths inside the image anyway (``sandbox/_inside/rootfs``); an image that holds such a
    link is hostile or broken, and is stored without it."""
    removed = []
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for path in paths:
            rel = path.strip("/")
            resolved = resolve_in_root(fd, rel)
            if resolved is not None and not (resolved and resolved[0] in _COVERED):
                continue
            parts = rel.split("/")
            for i in range(1, len(parts) + 1):  # the first link on the way is the culprit
                parent = open_dir_beneath(fd, parts[: i - 1])
                if parent is None:
                    break
                try:
                    st = os.stat(parts[i - 1], dir_fd=parent, follow_symlinks=False)
                    if stat.S_ISLNK(st.st_mode):
                        os.unlink(parts[i - 1], dir_fd=parent)
                        removed.append("/".join(parts[:i]))
                        break
                except FileNotFoundError:
                    break
                finally:
                    os.close(parent)
    finally:
        os.close(fd)
    return removed
