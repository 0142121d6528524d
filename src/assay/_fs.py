"""File-system helpers shared by the stores of the state directory (images, compile cache)."""

from __future__ import annotations

import errno
import os
import shutil
import stat


def tree_size(root: str | os.PathLike[str]) -> int:
    """Bytes of the files below ``root``: a symbolic link counts as itself (its target may
    be anywhere), and a file that vanishes during the walk as nothing."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir_beneath(root_fd: int, parts: list[str], create: bool = False) -> int | None:
    """A descriptor of the directory ``root_fd/parts[0]/parts[1]/...``, walked one component
    at a time with ``O_NOFOLLOW``: no symbolic link is ever followed, so whatever a hostile
    tree holds, the result is a real directory beneath ``root_fd`` (the caller closes it).

    ``create``: a missing component is made (0755), and one that is not a directory (a file
    or a symlink a lower layer left) is replaced by one. Otherwise None is returned when a
    component is missing or is not a directory."""
    cur = os.dup(root_fd)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=cur)
            except OSError as exc:
                # ENOENT: missing; ENOTDIR: a file; ELOOP: a symlink (O_NOFOLLOW).
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    raise
                if not create:
                    os.close(cur)
                    return None
                remove_at(cur, part)
                os.mkdir(part, 0o755, dir_fd=cur)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=cur)
            os.close(cur)
            cur = nxt
    except BaseException:
        os.close(cur)
        raise
    return cur


def open_dir_under(root: str, parts: list[str]) -> int | None:
    """:func:`open_dir_beneath` (no ``create``) from the directory ``root`` names (itself
    opened without following a link)."""
    top = os.open(root, _DIR_FLAGS)
    try:
        return open_dir_beneath(top, parts)
    finally:
        os.close(top)


def remove_at(dir_fd: int, name: str) -> None:
    """Remove ``dir_fd/name`` whatever it is (a directory with all it holds), never through
    a link; a missing entry is fine."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)  # fd-based: it never follows a link either
    else:
        os.unlink(name, dir_fd=dir_fd)
