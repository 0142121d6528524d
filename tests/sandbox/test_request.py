"""What a run request may hold (``sandbox/_request.py``): the verdict of input files that
take a run's whole memory, decided before any sandbox is used."""

from __future__ import annotations

import pytest

from assay import Limits
from assay.sandbox import RunRequest, Sandbox
from assay.sandbox._request import files_over_memory

MIB = 1 << 20


@pytest.mark.parametrize(
    ("sizes", "over"),
    [
        ([MIB * 64 - 4096], False),  # a page left for the program
        ([MIB * 64], True),
        ([MIB * 32, MIB * 32], True),  # together
        ([MIB * 32, MIB * 32 - 4095], True),  # whole pages: its last byte takes one
        ([MIB * 32, MIB * 32 - 4096 * 2], False),
    ],
)
def test_files_against_the_memory_limit(sizes: list[int], over: bool) -> None:
    files = [(f"f{i}", b"\0" * n, 0o644) for i, n in enumerate(sizes)]
    verdict = files_over_memory(files, Limits(memory_mb=64))
    if not over:
        assert verdict is None
        return
    assert verdict is not None
    assert verdict.status == "memory_limit"
    assert verdict.stderr == b"assay: the input files do not fit the run's memory limit\n"
    assert verdict.peak_memory_bytes >= 64 * MIB


def test_the_default_tier_uses_no_slot_for_files_that_cannot_fit() -> None:
    with Sandbox(pool_size=1) as sb:
        calls: list[object] = []
        acquire = sb._acquire
        sb._acquire = lambda *a: calls.append(a) or acquire(*a)  # type: ignore[method-assign]
        req = RunRequest(
            "python",
            ["/work/main.py"],
            [("main.py", b"print(1)\n", 0o644), ("blob", b"x" * (8 * MIB), 0o644)],
            limits=Limits(memory_mb=8),
        )
        res = sb.execute(req)
        assert res.status == "memory_limit"
        assert calls == []
        ok = sb.execute(
            RunRequest("python", ["/work/main.py"], [("main.py", b"print(1)\n", 0o644)])
        )
        assert ok.status == "ok" and len(calls) == 1
