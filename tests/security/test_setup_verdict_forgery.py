"""Claim: nothing a program or its build does can make its verdict ``sandbox_error``.

Attack (red-team finding 3): a ~1 KB C source that links into a 60 MiB binary, run under a
60 MiB memory limit, came back ``sandbox_error`` ("program setup failed") and was retried
with reward ``None``: copying the binary into the run's tmpfs is charged to the run's memory
cgroup, and the OOM kill during set-up was taken for our fault. It is now ``memory_limit``
(the run's files do not fit its memory), and a binary larger than the run's disk is a
``compile_error`` that says so, before any sandbox is used.
"""

from __future__ import annotations

import shutil

import pytest

from assay import Limits, ValidationError
from assay.sandbox import RunRequest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (Debian gcc)")

BIG_BINARY = (
    "#include <stdio.h>\n"
    "char big[60 << 20] = {1};\n"
    'int main(int argc, char **argv) { printf("%d\\n", big[argc * 12345]); return 0; }\n'
)


def test_binary_larger_than_memory_is_memory_limit_not_sandbox_error(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(BIG_BINARY, "c", limits=Limits(memory_mb=60))
    assert result.status == "memory_limit", (result.status, result.stderr[-300:])
    assert b"memory limit" in result.stderr


def test_binary_larger_than_disk_is_a_clear_compile_error(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(BIG_BINARY, "c", limits=Limits(memory_mb=256, disk_mb=32))
    assert result.status == "compile_error", (result.status, result.stderr[-300:])
    assert b"more than the run's disk (disk_mb=32)" in result.stderr


def test_same_binary_with_room_runs(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(BIG_BINARY, "c", limits=Limits(memory_mb=256))
    assert result.status == "ok", (result.status, result.stderr[-300:])
    assert result.stdout == b"0\n"


def test_input_files_larger_than_disk_are_refused_naming_the_field(runner) -> None:  # type: ignore[no-untyped-def]
    req = RunRequest(
        "python",
        ["/work/main.py"],
        [("main.py", b"print(1)\n", 0o644), ("blob", b"x" * (3 << 20), 0o644)],
        limits=Limits(disk_mb=2),
    )
    with pytest.raises(ValidationError, match="files"):
        runner.sandbox.execute(req)


def test_program_larger_than_its_disk_is_a_verdict_not_sandbox_error(runner) -> None:  # type: ignore[no-untyped-def]
    huge = "x = 1\n" + "#" * (3 << 20) + "\n"
    result = runner.run(huge, limits=Limits(disk_mb=2))
    assert result.status == "runtime_error", (result.status, result.stderr[-300:])
    assert b"does not fit the run's disk (disk_mb=2)" in result.stderr
    c_source = "int main(void) { return 0; }\n/*" + "#" * (300 << 20) + "*/\n"
    built = runner.run(c_source, "c")
    assert built.status == "compile_error", (built.status, built.stderr[-300:])
    assert b"does not fit the build's disk" in built.stderr
