"""``assay demo``'s sandbox table reads at 80 columns (issue 14): no status is cut."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from assay.demo import SAMPLES, run_demo
from assay.types import ExecResult


class _Canned:
    """Answers every sample with its expected status and a long first line of output."""

    def run(self, code: str, language: str, stdin: str, limits: Any) -> ExecResult:
        sample = next(s for s in SAMPLES if s.code == code)
        out = b"blocked: [Errno 97] Address family not supported by protocol\nmore\n"
        return ExecResult(sample.expect, 0, stdout=out, cpu_s=1.0, wall_s=4.0)  # type: ignore[arg-type]


def test_demo_table_reads_at_80_columns() -> None:
    console = Console(width=80, record=True, color_system=None)
    assert run_demo(_Canned(), console) == 0  # type: ignore[arg-type]
    text = console.export_text()
    assert "…" not in text
    assert all(len(line) <= 80 for line in text.splitlines())
    for status in ("runtime_error", "compile_error", "memory_limit", "output_limit"):
        assert status in text
    assert "protocol" in text
