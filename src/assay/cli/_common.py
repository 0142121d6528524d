"""What every ``assay`` command shares: the Typer app, the consoles, exit codes, errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from ..errors import InsecureHostError, ValidationError
from ..sandbox import SandboxConfig

EXIT_OK, EXIT_USAGE, EXIT_SANDBOX = 0, 2, 3

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Assay: run untrusted code in secure, fast sandboxes and judge it.",
    rich_markup_mode="rich",
)
console = Console()
err_console = Console(stderr=True)

#: The ``--insecure`` option of every command that runs programs (``insecure: Insecure = False``).
Insecure = Annotated[
    bool, typer.Option("--insecure", help="Run even if mandatory isolation is missing.")
]


def usage_error(argument: str, message: str) -> NoReturn:
    """One line naming the argument at fault, then exit 2."""
    err_console.print(f"[red]error:[/] {argument}: {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """A :class:`ValidationError` raised inside is the user's: :func:`usage_error` naming its
    field (``with usage_errors(): image = ImageStore().get(ref)``)."""
    try:
        yield
    except ValidationError as exc:
        usage_error(exc.field, exc.message)


def insecure_banner() -> None:
    err_console.print(
        "[bold white on red] INSECURE [/] mandatory isolation controls are missing on this host; "
        "programs run WITHOUT full isolation. Results are not safe to trust."
    )


def make_runner(insecure: bool) -> Any:
    from ..runner import Runner

    try:
        runner = Runner(config=SandboxConfig(insecure=insecure))
    except InsecureHostError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_SANDBOX) from exc
    if runner.insecure:
        insecure_banner()
    return runner
