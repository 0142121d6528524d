"""``assay demo``: bundled sample programs, run and judged."""

from __future__ import annotations

from ._common import Insecure, app, console, make_runner


@app.command()
def demo(insecure: Insecure = False) -> None:
    """Run bundled sample programs (correct, failing and hostile) and print a table.

    Example: [bold]assay demo[/]
    """
    from ..demo import run_demo, run_eval_demo

    runner = make_runner(insecure)
    try:
        run_demo(runner, console)
        run_eval_demo(runner, console)
    finally:
        runner.close()
