"""Claim: a Java program writing 1 GB to stdout is cut off at ``output_bytes`` and stopped at
once: ``output_limit``, exactly the first ``output_bytes`` bytes captured and flagged
truncated, and the program never gets to finish (its end marker on stderr never appears).
"""

from __future__ import annotations

import shutil
import time

import pytest

from assay import Limits

if shutil.which("javac") is None:
    pytest.skip("no OpenJDK (javac) on this host", allow_module_level=True)

CAP = 1 << 20

FLOOD = r"""
import java.io.*;
import java.util.Arrays;

public class Main {
    public static void main(String[] args) throws IOException {
        byte[] chunk = new byte[1 << 20];
        Arrays.fill(chunk, (byte) 'x');
        OutputStream out = args.length > 0 ? new FileOutputStream(FileDescriptor.out) : System.out;
        for (int i = 0; i < 1024; i++) out.write(chunk);
        out.flush();
        System.err.println("finished the flood");
    }
}
"""


@pytest.mark.parametrize("raw", [False, True], ids=["System.out", "raw-fd"])
def test_java_output_flood_is_cut_at_the_cap(runner, raw: bool) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=5, output_bytes=CAP)
    request = runner.request(FLOOD, "java", "", limits, args=["raw"] if raw else [])
    started = time.monotonic()
    result = runner.sandbox.execute(request)
    elapsed = time.monotonic() - started

    assert result.status == "output_limit", (result.status, result.stderr[-500:])
    assert result.stdout_truncated
    assert result.stdout == b"x" * CAP, len(result.stdout)
    assert b"finished the flood" not in result.stderr, "the program wrote the whole GB"
    assert elapsed < 3.0, f"the run took {elapsed:.2f}s"
