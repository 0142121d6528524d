"""Claim: a Java program that allocates without end is stopped at the run's memory limit.

The JVM cannot see the run's cgroup, so its heap cap is fixed and large: the cgroup, not an
OutOfMemoryError, ends the run, as ``memory_limit`` with ``peak_memory_bytes`` near and never
above the cap. Off-heap memory (direct buffers) is held by the same cap, and the next run in
the pool is unaffected.
"""

from __future__ import annotations

import shutil

import pytest

from assay import Limits

if shutil.which("javac") is None:
    pytest.skip("no OpenJDK (javac) on this host", allow_module_level=True)

MEMORY_MB = 128

BOMB = r"""
import java.nio.ByteBuffer;
import java.util.*;

public class Main {
    public static void main(String[] args) {
        boolean direct = new Scanner(System.in).next().equals("direct");
        List<Object> hoard = new ArrayList<>();
        for (int i = 1; ; i++) {
            if (direct) {
                ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
                while (b.hasRemaining()) b.put((byte) i);
                hoard.add(b);
            } else {
                long[] block = new long[1 << 17];
                Arrays.fill(block, i);
                hoard.add(block);
            }
        }
    }
}
"""


@pytest.mark.parametrize("kind", ["heap", "direct"])
def test_java_memory_bomb_hits_memory_limit(runner, kind: str) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=5, memory_mb=MEMORY_MB)
    cap = MEMORY_MB << 20
    result = runner.run(BOMB, "java", kind + "\n", limits)

    assert result.status == "memory_limit", (result.status, result.stderr[-2000:])
    assert 0.8 * cap <= result.peak_memory_bytes <= cap + (1 << 20), result.peak_memory_bytes
    assert result.wall_s < limits.time_s, f"run took {result.wall_s:.2f}s"

    after = runner.run("print(sum(range(10)))", limits=Limits(time_s=1, memory_mb=MEMORY_MB))
    assert (after.status, after.stdout) == ("ok", b"45\n"), after
