"""Claim: flooding stdout or stderr is cut off at ``output_bytes`` and stops the run at once.

A program that tries to write 1 GB must end as ``output_limit`` with exactly the first
``output_bytes`` bytes captured and the stream flagged truncated; the run is stopped as soon as
the cap is crossed, so the program never gets to finish writing (its end marker never appears)
and ``run()`` returns in a fraction of the time 1 GB would take.
"""

from __future__ import annotations

import time

import pytest

from assay import Limits

CAP = 1 << 20
GIGABYTE_LOOPS = 1024  # 1024 x 1 MiB

FLOODS = {
    "stdout-buffered": (
        "stdout",
        "import sys\n"
        "chunk = b'x' * (1 << 20)\n"
        f"for _ in range({GIGABYTE_LOOPS}):\n"
        "    sys.stdout.buffer.write(chunk)\n"
        "sys.stdout.flush()\n"
        "open('/dev/stderr', 'w').write('finished the flood')\n",
    ),
    "stdout-raw": (
        "stdout",
        "import os\n"
        "chunk = b'x' * (1 << 20)\n"
        f"for _ in range({GIGABYTE_LOOPS}):\n"
        "    view = memoryview(chunk)\n"
        "    while view:\n"
        "        view = view[os.write(1, view):]\n"
        "os.write(2, b'finished the flood')\n",
    ),
    "stderr": (
        "stderr",
        "import os\n"
        "chunk = b'x' * (1 << 20)\n"
        f"for _ in range({GIGABYTE_LOOPS}):\n"
        "    view = memoryview(chunk)\n"
        "    while view:\n"
        "        view = view[os.write(2, view):]\n"
        "os.write(1, b'finished the flood')\n",
    ),
}


@pytest.mark.parametrize(("stream", "code"), FLOODS.values(), ids=FLOODS.keys())
def test_output_flood_is_cut_at_the_cap(runner, stream: str, code: str) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=5, output_bytes=CAP)
    started = time.monotonic()
    result = runner.run(code, limits=limits)
    elapsed = time.monotonic() - started

    flooded = result.stdout if stream == "stdout" else result.stderr
    other = result.stderr if stream == "stdout" else result.stdout
    truncated = result.stdout_truncated if stream == "stdout" else result.stderr_truncated
    assert result.status == "output_limit", (result.status, result.stderr[-500:])
    assert truncated
    assert flooded == b"x" * CAP, len(flooded)
    assert b"finished the flood" not in other, "the program was allowed to write the whole GB"
    assert result.cpu_s < 1.0, f"the program kept running: {result.cpu_s:.2f} CPU s"
    assert elapsed < 2.0, f"run() returned after {elapsed:.2f}s"
