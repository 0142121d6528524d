"""The ``assay`` command line: one module per command, registered on one Typer app.

Exit status: 0 when the sandbox did its job (whatever the program did), 2 for usage errors,
3 when the sandbox itself failed.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .. import __version__
from ..errors import ValidationError
from . import demo, doctor, evaluate, run, worker  # noqa: F401  (each registers its command)
from ._common import EXIT_OK, EXIT_SANDBOX, EXIT_USAGE, app, console, err_console


def _print_version(value: bool) -> None:
    if value:
        console.print(f"assay {__version__}", highlight=False)
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Assay: run untrusted code in secure, fast sandboxes and judge it."""


def _register_records() -> None:
    from ..telemetry.cli import records_app

    app.add_typer(
        records_app, name="records", help="Query, summarise and compact execution records."
    )


def _register_image() -> None:
    from .image import image_app

    app.add_typer(image_app, name="image")


def _register_serve() -> None:
    from .serve import serve_command

    app.command("serve")(serve_command)


def _register_tests() -> None:
    from .tests import tests_app

    app.add_typer(tests_app, name="tests")


def _register_agents() -> None:
    from .agent import agent_app
    from .tasks import tasks_app

    app.add_typer(tasks_app, name="tasks")
    app.add_typer(agent_app, name="agent")


def _register_top() -> None:
    from ..telemetry.top import top_command

    app.command("top")(top_command)


_register_records()
_register_image()
_register_serve()
_register_tests()
_register_top()
_register_agents()


def main() -> None:
    try:
        app()
    except ValidationError as exc:
        # One line, however long (soft_wrap): a terminal wraps it, a log keeps it whole.
        err_console.print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True, markup=True)
        sys.exit(EXIT_USAGE)


__all__ = ["EXIT_OK", "EXIT_SANDBOX", "EXIT_USAGE", "app", "console", "err_console", "main"]
