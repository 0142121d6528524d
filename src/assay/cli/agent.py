"""``assay agent demo``: scripted agents on repair tasks, with their step rewards."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import EXIT_OK, console, make_runner

agent_app = typer.Typer(no_args_is_help=True, help="Agent episodes on sessions.")


@agent_app.command("demo")
def demo_command(
    gated: Annotated[
        bool, typer.Option(help="Pay step rewards only if the episode passes.")
    ] = False,
    insecure: Annotated[bool, typer.Option(help="Run without mandatory controls.")] = False,
) -> None:
    """Run four scripted agents (fixer, tamperer, looper, breaker) on CodeT repair tasks and
    print each episode step by step with its step rewards (reads ../shared/corpora or
    $ASSAY_CORPORA).

    Example: [bold]assay agent demo[/]   or   [bold]assay agent demo --gated[/]
    """
    from ..agents.demo import run_agent_demo
    from ..demo import CORPORA

    with make_runner(insecure) as runner:
        surprises = run_agent_demo(runner, console, CORPORA, gated=gated)
    raise typer.Exit(EXIT_OK if surprises == 0 else 1)
