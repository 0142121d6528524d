"""Claim: the program's writable space is one tmpfs capped at ``disk_mb``; the host disk is untouched.

The work dir, /tmp and /dev/shm share one size-capped tmpfs: writing until failure must fail
with ENOSPC once about ``disk_mb`` MiB are stored in all three together, preallocating more
must fail too, and the host's free disk space must not move.
"""

from __future__ import annotations

import json
import os

from assay import Limits

DISK_MB = 48

FILL = r"""
import errno, json, os

def fill(path):
    written, error = 0, None
    chunk = b"\xa5" * (1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while written < (1 << 30):
            written += os.write(fd, chunk)
    except OSError as exc:
        error = errno.errorcode[exc.errno]
    finally:
        os.close(fd)
    return written, error

report = {}
for path in ("/work/fill.bin", "/tmp/fill.bin", "/dev/shm/fill.bin", "fill2.bin"):
    report[path] = fill(path)
try:
    fd = os.open("/work/prealloc.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    os.posix_fallocate(fd, 0, 1 << 30)
    report["fallocate"] = "succeeded"
except OSError as exc:
    report["fallocate"] = errno.errorcode[exc.errno]
st = os.statvfs("/work")
report["work_size"] = st.f_blocks * st.f_frsize
print(json.dumps(report))
"""


def _host_free() -> dict[str, int]:
    free = {}
    for path in ("/", "/tmp", "/var/tmp", "/work", "/root"):
        if os.path.isdir(path):
            st = os.statvfs(path)
            free[path] = st.f_bavail * st.f_frsize
    return free


def test_disk_fill_stops_at_disk_mb(runner) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=5, memory_mb=256, disk_mb=DISK_MB, file_bytes=1 << 30)
    before = _host_free()
    result = runner.run(FILL, limits=limits)
    after = _host_free()

    assert result.status == "ok", (result.status, result.stderr[-2000:])
    report = json.loads(result.stdout)
    cap = DISK_MB << 20
    total = 0
    for path in ("/work/fill.bin", "/tmp/fill.bin", "/dev/shm/fill.bin", "fill2.bin"):
        written, error = report[path]
        assert error == "ENOSPC", (path, written, error)
        total += written
    assert report["/work/fill.bin"][0] >= cap // 2, "the first fill stopped far below the cap"
    assert total <= cap, f"{total} bytes stored in a {DISK_MB} MiB sandbox"
    assert report["fallocate"] in ("ENOSPC", "EFBIG"), report["fallocate"]
    assert report["work_size"] <= cap, report["work_size"]

    for path, free in before.items():
        delta = abs(after[path] - free)
        assert delta < 16 << 20, f"host free space on {path} moved by {delta} bytes"
