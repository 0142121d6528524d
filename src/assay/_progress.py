"""The live progress bar of long judging runs: done/total, rate, ETA and the verdict mix.

The bar is one line and the verdict mix a second one below it, so that at 80 columns neither
is cut (a mix of six verdicts with their counts does not fit beside a bar).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

OnStart = Callable[[int], None]
OnRow = Callable[[dict[str, Any]], None]


class _TwoLineProgress(Progress):
    """A progress bar with the verdict mix on its own line (wrapped, never cut)."""

    mix = ""

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        if self.mix:
            yield Text(self.mix, overflow="fold")


@contextmanager
def judging_progress(console: Console, label: str = "judging") -> Iterator[tuple[OnStart, OnRow]]:
    """Yields ``(on_start(total), on_row(row))`` callbacks that drive one progress bar. The
    bar appears at ``on_start``, so an error before any work prints no empty bar."""
    mix: dict[str, int] = {}
    progress = _TwoLineProgress(
        TextColumn(label),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    task = progress.add_task(label, total=None, rate="")
    started = time.monotonic()

    def on_start(total: int) -> None:
        nonlocal started
        started = time.monotonic()
        progress.update(task, total=total)
        progress.start()

    def on_row(row: dict[str, Any]) -> None:
        verdict = str(row.get("verdict") or "not judged")
        mix[verdict] = mix.get(verdict, 0) + 1
        done = sum(mix.values())
        rate = done / max(1e-9, time.monotonic() - started)
        progress.mix = "  ".join(f"{k} {v}" for k, v in sorted(mix.items()))
        progress.update(task, advance=1, rate=f"{rate:.1f}/s")

    try:
        yield on_start, on_row
    finally:
        if progress.live.is_started:
            progress.stop()
