"""launcher.c as built for this host (sandbox/_launch.py): the library must also load in a
task image's older interpreter, so it may need nothing of glibc newer than 2.14 (bullseye
has 2.31; a symbol versioned 2.33, such as ``fstat`` compiled on bookworm, kept it from
loading there, and every Python run of the image fell back to the slower Python steps)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from assay.sandbox._launch import build_native

NEWEST_GLIBC = (2, 14)


def test_the_library_needs_no_glibc_newer_than_2_14() -> None:
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (Debian package binutils) is not installed")
    library = build_native().library
    if library is None:
        pytest.skip("no C compiler: the library is not built on this host")
    symbols = subprocess.run(
        [objdump, "-T", library], capture_output=True, text=True, check=True
    ).stdout
    needed = {
        (tuple(int(x) for x in m.group(1).split(".")), m.group(0))
        for line in symbols.splitlines()
        if "*UND*" in line and (m := re.search(r"GLIBC_([0-9.]+)\)?\s+(\S+)$", line))
    }
    assert needed, "no glibc symbol found: objdump's output changed?"
    too_new = sorted(line for version, line in needed if version > NEWEST_GLIBC)
    assert too_new == []
