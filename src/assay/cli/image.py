"""``assay image import|build|list|inspect|rm``: the task images of the state directory."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import defaults
from ..errors import AssayError
from ..images import BuildError, ImageSpec, ImageStore, build_image, import_image
from ._common import EXIT_OK, EXIT_SANDBOX, EXIT_USAGE, console, err_console, usage_errors

image_app = typer.Typer(
    no_args_is_help=True,
    help="Task images: read-only root file systems runs can use instead of the host's.",
)


#: The argument of the commands that act on one stored image.
ImageRef = Annotated[str, typer.Argument(help="Image id, id prefix or name.")]


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


@image_app.command("import")
def import_command(
    archive: Annotated[str, typer.Argument(help="OCI layout (dir or tar) or `docker save` tar.")],
    name: Annotated[str | None, typer.Option(help="Name to list it under.")] = None,
    max_bytes: Annotated[
        int,
        typer.Option(
            min=1, help="Refuse an image whose layers expand past this many bytes of files."
        ),
    ] = defaults.IMAGE_MAX_BYTES,
) -> None:
    """Import an image archive (nothing of it is executed; links never followed).

    Example: [bold]assay image import ./python39.oci.tar --name py39[/]
    """
    with (
        usage_errors(),
        Progress(
            TextColumn("importing layers"), BarColumn(), TextColumn("{task.completed}/{task.total}")
        ) as bar,
    ):
        task = bar.add_task("layers", total=None)
        image = import_image(
            archive,
            name=name,
            progress=lambda d, t: bar.update(task, completed=d, total=t),
            max_bytes=max_bytes,
        )
    console.print(f"{image.id}  {image.name}  {_size(image.size_bytes)}", highlight=False)


@image_app.command("build")
def build_command(
    spec: Annotated[
        str, typer.Argument(help="Spec file (TOML or JSON): name, suite, packages, pip.")
    ],
) -> None:
    """Build an image from Debian packages (mmdebstrap) and pip requirements; needs root.
    The same spec always gives the same image id (a second build is instant).

    Example: [bold]assay image build examples/images/py39.toml[/]
    """
    with usage_errors():
        parsed = ImageSpec.load(spec)
    started = time.monotonic()
    # Said before it starts, on every output: a build takes minutes, and without a terminal
    # (CI, a pipe) the spinner below shows nothing, so each line of the tools is printed.
    err_console.print(
        f"building {parsed.name} ({parsed.suite}) with mmdebstrap"
        f"{' and pip' if parsed.pip else ''}: this takes a few minutes the first time",
        highlight=False,
    )
    plain = not err_console.is_terminal
    try:
        with (
            usage_errors(),
            Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                transient=True,
                disable=plain,
                console=err_console,
            ) as bar,
        ):
            task = bar.add_task(f"building {parsed.name} ({parsed.suite})")

            def on_line(line: str) -> None:
                if plain:
                    err_console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
                else:
                    bar.update(task, description=line[:70] or "building")

            image = build_image(parsed, on_line=on_line)
    except BuildError as exc:
        err_console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_SANDBOX) from exc
    console.print(
        f"{image.id}  {image.name}  python {image.python or '-'}  {_size(image.size_bytes)}"
        f"  ({time.monotonic() - started:.0f} s)",
        highlight=False,
    )


@image_app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List the stored images.

    Example: [bold]assay image list[/]
    """
    images = ImageStore().list()
    if as_json:
        for image in images:
            sys.stdout.write(json.dumps(image.to_json()) + "\n")
        return
    table = Table(title=f"Images in {ImageStore().root}")
    for col in ("id", "name", "python", "size", "source"):
        table.add_column(col, overflow="fold")
    for image in images:
        table.add_row(
            image.short_id, image.name, image.python or "-", _size(image.size_bytes), image.source
        )
    console.print(table)


@image_app.command("inspect")
def inspect_command(
    image: ImageRef,
) -> None:
    """Print an image's metadata as JSON.

    Example: [bold]assay image inspect py39[/]
    """
    with usage_errors():
        found = ImageStore().get(image)
    sys.stdout.write(json.dumps({**found.to_json(), "path": found.path}, indent=1) + "\n")


@image_app.command("rm")
def rm_command(
    image: ImageRef,
) -> None:
    """Delete an image from the store.

    Example: [bold]assay image rm py39[/]
    """
    try:
        with usage_errors():
            gone = ImageStore().remove(image)
    except AssayError as exc:
        err_console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    console.print(f"removed {gone.id}  {gone.name}", highlight=False)
    raise typer.Exit(EXIT_OK)
