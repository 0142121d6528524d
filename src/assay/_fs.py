"""File-system helpers shared by the stores of the state directory (images, compile cache)."""

from __future__ import annotations

import os


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
