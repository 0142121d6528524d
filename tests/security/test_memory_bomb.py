"""Claim: a program that allocates without end is stopped at its memory limit.

The cgroup caps the whole run (every process of it, swap included) at ``Limits.memory_mb``: an
endless allocation ends as ``memory_limit``, with ``peak_memory_bytes`` (read from the kernel)
close to, and never above, the limit, promptly and without hurting the host or the pool.
Spreading the allocation over several processes must not get around the cap.
"""

from __future__ import annotations

import time

import pytest

from assay import Limits

MEMORY_MB = 128

# Pages are filled with non-zero bytes so they are really committed, not lazily mapped.
ONE_PROCESS = r"""
hoard = []
i = 0
while True:
    hoard.append(bytes([i % 255 + 1]) * (1 << 20))
    i += 1
"""

# Four processes allocating together: the cap is per run, not per process.
FOUR_PROCESSES = r"""
import os
for _ in range(3):
    if os.fork() == 0:
        break
hoard = []
i = 0
while True:
    hoard.append(bytes([i % 255 + 1]) * (1 << 20))
    i += 1
"""


@pytest.mark.parametrize("code", [ONE_PROCESS, FOUR_PROCESSES], ids=["one", "four-processes"])
def test_memory_bomb_hits_memory_limit(runner, code: str) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=2, memory_mb=MEMORY_MB)
    cap = MEMORY_MB << 20
    started = time.monotonic()
    result = runner.run(code, limits=limits)
    elapsed = time.monotonic() - started

    assert result.status == "memory_limit", (result.status, result.stderr[-2000:])
    assert 0.8 * cap <= result.peak_memory_bytes <= cap + (1 << 20), result.peak_memory_bytes
    assert elapsed < limits.time_s + 2, f"run took {elapsed:.2f}s"

    after = runner.run("print(sum(range(10)))", limits=Limits(time_s=1, memory_mb=MEMORY_MB))
    assert (after.status, after.stdout) == ("ok", b"45\n"), after
