"""Applying an image layer (a tar stream) to a root file system being assembled, safely.

The archive is untrusted: its member names may try to leave the root (an absolute name,
``..``, a path through a symlink the archive itself planted), its members may be device
nodes, and its files may be set-uid. So every member is checked before anything is
written, parent directories are walked with ``lstat`` (a symlink is never followed while
writing), hard links must point at a file already inside the root, device nodes are
refused, and set-uid/set-gid bits are dropped (the store is on the host; a set-uid root
binary there would be a gift to any local user). Nothing from the image is executed.

Whiteouts follow the OCI image spec: ``.wh.NAME`` deletes ``NAME`` of the lower layers,
``.wh..wh..opq`` empties its directory of the lower layers' entries.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
from collections.abc import Iterable
from typing import IO

from ..errors import ValidationError

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
#: Mode bits kept from the archive: permissions and the sticky bit, never set-uid/set-gid.
MODE_MASK = 0o1777


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


def check_members(field: str, members: Iterable[tarfile.TarInfo]) -> list[tarfile.TarInfo]:
    """Validate every member before anything is written: names, kinds, link targets."""
    checked = []
    for m in members:
        member_path(field, m.name)
        if m.ischr() or m.isblk():
            raise ValidationError(field, f"archive member {m.name!r} is a device node")
        if not (m.isreg() or m.isdir() or m.issym() or m.islnk() or m.isfifo()):
            raise ValidationError(field, f"archive member {m.name!r} has an unsupported type")
        if m.islnk():
            member_path(field, m.linkname)
        checked.append(m)
    return checked


def _parent(root: str, rel: str, create: bool) -> str | None:
    """The host path of ``rel``'s parent directory inside ``root``, walking each component
    with ``lstat`` so that no symlink is followed; None if it does not exist (``create``
    False). A component that exists but is not a real directory is an error."""
    cur = root
    for part in rel.split("/")[:-1]:
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(cur, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            if not create:
                return None
            # A lower layer's file or symlink where this layer needs a directory: replaced.
            os.unlink(cur)
            os.mkdir(cur, 0o755)
    return cur


def _remove(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def apply_layer(field: str, root: str, fileobj: IO[bytes]) -> int:
    """Apply one layer (any compression ``tarfile`` detects) to ``root``; returns how many
    members were written."""
    with tarfile.open(fileobj=fileobj, mode="r:*") as tar:
        members = check_members(field, tar.getmembers())
        # Whiteouts refer to lower layers only: apply all of them before this layer's files.
        for m in members:
            rel = member_path(field, m.name)
            base = rel.rsplit("/", 1)[-1]
            if not base.startswith(WHITEOUT):
                continue
            parent = _parent(root, rel, create=False)
            if parent is None:
                continue
            if base == OPAQUE:
                for entry in os.listdir(parent):
                    _remove(os.path.join(parent, entry))
            else:
                _remove(os.path.join(parent, base[len(WHITEOUT) :]))
        written = 0
        dir_modes: list[tuple[str, int]] = []
        for m in members:
            rel = member_path(field, m.name)
            if not rel or rel.rsplit("/", 1)[-1].startswith(WHITEOUT):
                continue
            parent = _parent(root, rel, create=True)
            assert parent is not None
            dst = os.path.join(parent, rel.rsplit("/", 1)[-1])
            mode = m.mode & MODE_MASK
            if m.isdir():
                if not os.path.isdir(dst) or os.path.islink(dst):
                    _remove(dst)
                    os.mkdir(dst, 0o755)
                dir_modes.append((dst, mode))  # applied last: a 0o555 dir still takes files
            else:
                _remove(dst)
                if m.isreg():
                    src = tar.extractfile(m)
                    assert src is not None
                    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                    with os.fdopen(fd, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                    os.chmod(dst, mode)
                elif m.issym():
                    os.symlink(m.linkname, dst)
                elif m.islnk():
                    _link(field, root, m, dst)
                elif m.isfifo():
                    os.mkfifo(dst, mode)
            written += 1
        for path, mode in reversed(dir_modes):
            os.chmod(path, mode)
    return written


def _link(field: str, root: str, m: tarfile.TarInfo, dst: str) -> None:
    """A hard link to a regular file already in ``root`` (found without following links)."""
    rel = member_path(field, m.linkname)
    parent = _parent(root, rel, create=False)
    target = os.path.join(parent, rel.rsplit("/", 1)[-1]) if parent is not None else ""
    if not target or not stat.S_ISREG(os.lstat(target).st_mode if os.path.lexists(target) else 0):
        raise ValidationError(
            field, f"archive member {m.name!r} links to {m.linkname!r}, not a file of the image"
        )
    os.link(target, dst, follow_symlinks=False)
