"""A tiny root file system made from the host's own Python (Debian 12's python3.11, its
standard library and the libraries it links), hard-linked, not copied, where the file
system allows: the raw material of the hostile images the security tests make themselves
(no registry, no builder, and no importer in between to clean what they plant).

Never write into a file of such a root: it may be the host's own (a hard link). Replace it
(unlink, then create) instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

HOST_PYTHON = "/usr/bin/python3.11"


def _libraries(files: list[str]) -> set[str]:
    """The shared libraries (as the loader names them) ``files`` need, by ``ldd``."""
    out = subprocess.run(["ldd", *files], capture_output=True, text=True).stdout
    return set(re.findall(r"=> (/\S+)", out)) | set(re.findall(r"^\s+(/\S+ld-linux\S*)", out, re.M))


def _place(src: str, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if os.path.islink(src):
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst)  # the store and /usr share a file system: nothing is copied
    except OSError:
        shutil.copy2(src, dst)


def tiny_rootfs(rootfs: Path) -> None:
    """The host's Python 3.11 with its standard library and libraries, merged-/usr style."""
    stdlib = "/usr/lib/python3.11"
    for dirpath, dirs, names in os.walk(stdlib):
        dirs[:] = [d for d in dirs if d not in ("test", "site-packages", "dist-packages")]
        for name in names:
            src = os.path.join(dirpath, name)
            _place(src, rootfs / src.lstrip("/"))
    _place(HOST_PYTHON, rootfs / "usr/bin/python3.11")
    os.symlink("python3.11", rootfs / "usr/bin/python3")
    dynload = [str(p) for p in Path(stdlib, "lib-dynload").glob("*.so")]
    for lib in _libraries([HOST_PYTHON, *dynload]):
        real = os.path.realpath(lib)
        rel = re.sub(r"^/(usr/)?", "usr/", lib)  # /lib/x86_64-linux-gnu/... -> usr/lib/...
        _place(real, rootfs / rel)  # the loader: /lib64/ld-linux... -> usr/lib64/...
    os.symlink("usr/lib64", rootfs / "lib64")
