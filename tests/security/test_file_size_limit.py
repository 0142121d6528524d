"""Claim: no single file can grow beyond ``file_bytes``, and trying is reported.

RLIMIT_FSIZE caps every file the program writes. A Python program (which ignores SIGXFSZ)
gets EFBIG at the cap, whether it writes, appends, writes at an offset or truncates upwards,
and cannot raise the limit; left uncaught, the error is a ``runtime_error``. A C program,
which keeps the default SIGXFSZ action, is killed by that signal and the run is reported as
not ok. In every case the file on disk stops at ``file_bytes``.
"""

from __future__ import annotations

import json
import signal

from assay import Limits, RunRequest

FILE_BYTES = 1 << 20
LIMITS = Limits(time_s=2, file_bytes=FILE_BYTES, disk_mb=64)

PY_ATTEMPTS = r"""
import errno, json, os, resource

cap = int(open("cap").read())
report = {}

def attempt(label, fn):
    try:
        fn()
        report[label] = "succeeded"
    except OSError as exc:
        report[label] = errno.errorcode[exc.errno]
    except ValueError as exc:
        report[label] = "ValueError"

def stream():
    with open("stream.bin", "wb") as fh:
        for _ in range(8):
            fh.write(b"\x01" * cap)

def append():
    with open("append.bin", "wb") as fh:
        fh.write(b"\x02" * (cap - 10))
    with open("append.bin", "ab") as fh:
        fh.write(b"\x02" * 100)

def offset():
    fd = os.open("offset.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"\x03", 16 * cap)
    finally:
        os.close(fd)

def grow():
    with open("grow.bin", "wb") as fh:
        fh.truncate(64 * cap)

def raise_limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

attempt("raise", raise_limit)
attempt("stream", stream)
attempt("append", append)
attempt("offset", offset)
attempt("grow", grow)
report["sizes"] = {name: os.path.getsize(name) for name in sorted(os.listdir(".")) if name.endswith(".bin")}
print(json.dumps(report))
"""

C_WRITER = r"""
#include <stdio.h>
#include <string.h>
int main(void) {
    static char block[1 << 16];
    memset(block, 'x', sizeof block);
    FILE *f = fopen("big.bin", "wb");
    if (!f) return 2;
    for (int i = 0; i < 1024; i++) {   /* 64 MiB, far past the cap */
        if (fwrite(block, 1, sizeof block, f) != sizeof block) { perror("fwrite"); return 3; }
        fflush(f);
    }
    puts("wrote everything");
    return 0;
}
"""


def test_python_writes_stop_at_file_bytes(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.sandbox.execute(
        RunRequest(
            "python",
            ["/work/main.py"],
            [("main.py", PY_ATTEMPTS.encode(), 0o644), ("cap", str(FILE_BYTES).encode(), 0o644)],
            limits=LIMITS,
            collect=["stream.bin", "append.bin", "offset.bin", "grow.bin"],
        )
    )
    assert result.status == "ok", (result.status, result.stderr[-2000:])
    report = json.loads(result.stdout)
    assert report["raise"] in ("ValueError", "EPERM"), report
    for label in ("stream", "append", "offset", "grow"):
        assert report[label] == "EFBIG", (label, report)
    assert all(size <= FILE_BYTES for size in report["sizes"].values()), report["sizes"]
    assert all(len(data) <= FILE_BYTES for data in result.files.values())


def test_uncaught_efbig_is_a_runtime_error(runner) -> None:  # type: ignore[no-untyped-def]
    code = "with open('big.bin', 'wb') as fh:\n    fh.write(b'x' * (8 << 20))\n"
    result = runner.run(code, limits=LIMITS)
    assert result.status == "runtime_error", (result.status, result.stderr[-2000:])
    assert b"File too large" in result.stderr, result.stderr[-2000:]


def test_c_program_is_killed_by_sigxfsz(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(C_WRITER, language="c", limits=LIMITS)
    assert result.status not in ("ok", "sandbox_error", "compile_error"), (
        result.status,
        result.stderr[-2000:],
    )
    assert result.signal == signal.SIGXFSZ, result
    assert b"wrote everything" not in result.stdout


def test_external_tool_is_killed_by_sigxfsz(runner) -> None:  # type: ignore[no-untyped-def]
    """A system binary (dd) gets the default SIGXFSZ action back and stops at the cap."""
    result = runner.sandbox.execute(
        RunRequest(
            "exec",
            ["/usr/bin/dd", "if=/dev/zero", "of=big.bin", "bs=64K", "count=1024"],
            limits=LIMITS,
            collect=["big.bin"],
        )
    )
    assert result.status not in ("ok", "sandbox_error"), (result.status, result.stderr[-2000:])
    assert result.signal == signal.SIGXFSZ, result
    assert len(result.files.get("big.bin", b"")) <= FILE_BYTES
    assert "big.bin" in result.files, "the partial file should still be collectable"
