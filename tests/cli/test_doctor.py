"""``assay doctor`` reads at 80 columns (issue 14): details fold, nothing is cut."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assay.cli.doctor import _short

ASSAY = str(Path(sys.executable).with_name("assay"))


def test_doctor_reads_at_80_columns() -> None:
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run(
        [ASSAY, "doctor"], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert "seccomp" in proc.stdout
    assert "…" not in proc.stdout
    assert all(len(line) <= 80 for line in proc.stdout.splitlines())


def test_toolchain_strings_are_shown_as_tool_versions() -> None:
    assert _short("gcc:gcc (Debian 12.2.0-14+deb12u1) 12.2.0:-std=c11") == "gcc 12.2.0"
    ts = "esbuild:0.28.2:--format=cjs:node:v20.20.2:--max-old-space-size=16384:/usr/lib"
    assert _short(ts) == "esbuild 0.28.2, node 20.20.2"
    assert _short("python:/usr/bin/python3:Python 3.11.2") == "python 3.11.2"
    assert _short("executable") == "executable"
