"""Claim: a C++ program writing 1 GB to stdout is stopped at the output cap, never blocks."""

from __future__ import annotations

import time

from assay import Limits

FLOOD = r"""
#include <cstdio>
#include <cstring>
int main() {
    static char buf[1 << 20];
    std::memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 1024; i++) std::fwrite(buf, 1, sizeof buf, stdout);
    return 0;
}
"""


def test_cpp_output_flood_is_capped(runner) -> None:  # type: ignore[no-untyped-def]
    cap = 1 << 20
    started = time.monotonic()
    result = runner.run(FLOOD, "cpp", limits=Limits(time_s=10, output_bytes=cap))
    assert time.monotonic() - started < 15
    assert result.status == "output_limit", result.status
    assert result.stdout_truncated and len(result.stdout) <= cap
