"""Claim: a Go program flooding stdout with 1 GB is cut off at ``output_bytes`` and stopped
at once.

Both unbuffered writes (``os.Stdout.Write``, one write syscall per MiB) and a ``bufio.Writer``
must end as ``output_limit`` with exactly the first ``output_bytes`` bytes captured and the
stream flagged truncated; the program never finishes the flood (its end note on stderr never
appears) and ``run()`` returns in a fraction of the time 1 GB would take.
"""

from __future__ import annotations

import os
import time

import pytest

from assay import Limits
from assay.languages.go import GO

if not os.access(GO, os.X_OK):
    pytest.skip(f"no Go toolchain at {GO} (apt-get install golang-go)", allow_module_level=True)

CAP = 1 << 20

FLOODS = {
    "os-stdout": r"""package main

import (
	"bytes"
	"os"
)

func main() {
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 1024; i++ {
		os.Stdout.Write(chunk)
	}
	os.Stderr.WriteString("finished the flood")
}
""",
    "bufio": r"""package main

import (
	"bufio"
	"os"
	"strings"
)

func main() {
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	line := strings.Repeat("x", 1023)
	for i := 0; i < 1<<20; i++ {
		out.WriteString(line)
		out.WriteByte('x')
	}
	out.Flush()
	os.Stderr.WriteString("finished the flood")
}
""",
}


@pytest.mark.parametrize("code", FLOODS.values(), ids=FLOODS.keys())
def test_go_output_flood_is_cut_at_the_cap(runner, code: str) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=5, output_bytes=CAP)
    runner.request(code, "go")  # compiles (cached), so the timed run is the program alone
    started = time.monotonic()
    result = runner.run(code, "go", limits=limits)
    elapsed = time.monotonic() - started

    assert result.status == "output_limit", (result.status, result.stderr[-500:])
    assert result.stdout_truncated
    assert result.stdout == b"x" * CAP, len(result.stdout)
    assert b"finished the flood" not in result.stderr, "the program wrote the whole GB"
    assert result.cpu_s < 1.0, f"the program kept running: {result.cpu_s:.2f} CPU s"
    assert elapsed < 2.0, f"run() returned after {elapsed:.2f}s"
