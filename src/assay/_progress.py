"""The live progress bar of long judging runs: done/total, rate, ETA and the verdict mix."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

OnStart = Callable[[int], None]
OnRow = Callable[[dict[str, Any]], None]


@contextmanager
def judging_progress(console: Console, label: str = "judging") -> Iterator[tuple[OnStart, OnRow]]:
    """Yields ``(on_start(total), on_row(row))`` callbacks that drive one progress bar."""
    mix: dict[str, int] = {}
    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[mix]}"),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task(label, total=None, rate="", mix="")
        started = time.monotonic()

        def on_start(total: int) -> None:
            nonlocal started
            started = time.monotonic()
            progress.update(task, total=total)

        def on_row(row: dict[str, Any]) -> None:
            verdict = str(row.get("verdict") or "none")
            mix[verdict] = mix.get(verdict, 0) + 1
            done = sum(mix.values())
            rate = done / max(1e-9, time.monotonic() - started)
            text = " ".join(f"{k}:{v}" for k, v in sorted(mix.items()))
            progress.update(task, advance=1, rate=f"{rate:.1f}/s", mix=text)

        yield on_start, on_row
