"""``assay doctor``: which isolation controls this host offers."""

from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from .. import languages
from ..sandbox import SandboxConfig, probe_host
from ..sandbox._launch import build_native
from ._common import EXIT_OK, EXIT_SANDBOX, app, console


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report.")] = False,
) -> None:
    """Report which isolation controls this host offers and which Assay will use.

    Example: [bold]assay doctor[/]
    """
    cfg = SandboxConfig()
    report = probe_host(cfg)
    missing = report.missing_mandatory()
    langs = _language_versions()
    native = build_native() if cfg.launcher else None
    fast_start = {
        "launcher": native.launcher if native else None,
        "library": native.library if native else None,
    }
    environments = _environments()
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    **report.to_dict(),
                    "missing_mandatory": missing,
                    "languages": langs,
                    "fast_start": fast_start,
                    **environments,
                }
            )
            + "\n"
        )
        raise typer.Exit(EXIT_OK if not missing else EXIT_SANDBOX)
    # Fits 80 columns: long details (paths) fold onto the next line instead of being cut.
    table = Table(title="Assay sandbox controls on this host")
    table.add_column("control", overflow="fold")
    table.add_column("available", no_wrap=True)
    table.add_column("mandatory", no_wrap=True)

    def row(name: str, ok: bool, mandatory: bool, detail: str = "") -> None:
        mark = "[green]yes[/]" if ok else ("[red]NO[/]" if mandatory else "[yellow]no[/]")
        table.add_row(name + (f" ({detail})" if detail else ""), mark, "yes" if mandatory else "")

    row("running as root", report.root, False)
    row("user namespaces", report.userns, not report.root)
    for name, ok in report.namespaces.items():
        row(f"{name} namespace", ok, True)
    for name, ok in report.cgroup_controllers.items():
        row(f"cgroup {report.cgroup_version} {name}", ok, name in ("memory", "pids"))
    row("per-run CPU weight", bool(report.cpu_weights), False, report.cpu_weights or "off")
    row("sandbox user ids", report.sandbox_ids_ok, True, report.sandbox_ids)
    row("seccomp", report.seccomp, True, report.seccomp_detail)
    row("Landlock", report.landlock_abi > 0, False, f"ABI {report.landlock_abi}")
    row("sandbox interpreter", report.python_ok, True, report.python)
    for label, path in (
        ("C launcher (executables start fast)", fast_start["launcher"]),
        ("C set-up library (Python programs start fast)", fast_start["library"]),
    ):
        row(label, path is not None, False, path or "no C compiler: the Python fallback is used")
    gv = environments["gvisor"]
    row("gVisor tier (isolation=gvisor)", gv["available"], False, gv["detail"])
    row(
        "image builds (mmdebstrap)",
        environments["image_build"]["available"],
        False,
        environments["image_build"]["detail"],
    )
    console.print(table)
    if environments["images"]:
        img_table = Table(title="Task images")
        for col in ("id", "name", "python", "size"):
            img_table.add_column(col, overflow="fold")
        for image in environments["images"]:
            img_table.add_row(
                image["id"][:12],
                image["name"],
                image["python"] or "-",
                f"{image['size_bytes'] / (1 << 20):.0f} MiB",
            )
        console.print(img_table)
    lang_table = Table(title="Languages")
    lang_table.add_column("language", no_wrap=True)
    lang_table.add_column("installed", no_wrap=True)
    lang_table.add_column("version", overflow="fold")
    for name, version in langs.items():
        ok = "missing" not in version
        lang_table.add_row(
            name, "[green]yes[/]" if ok else "[yellow]no[/]", _short(version) if ok else version
        )
    console.print(lang_table)
    for note in report.notes:
        console.print(f"note: {note}")
    if missing:
        console.print(
            f"[red]Missing mandatory controls:[/] {', '.join(missing)}. Running code is refused unless --insecure."
        )
        raise typer.Exit(EXIT_SANDBOX)
    console.print(
        "[green]All mandatory controls are available; every sandbox uses all of the above.[/]"
    )


def _short(toolchain: str) -> str:
    """``tool version`` for each tool of a toolchain string (which also holds flags and
    paths, for the compile cache's keys): ``esbuild:0.28.2:--flags:node:v20.1:...`` ->
    ``esbuild 0.28.2, node 20.1``."""
    parts = toolchain.split(":")
    shown: list[str] = []
    for i, tool in enumerate(parts):
        if not re.fullmatch(r"[a-z][a-z+]*", tool) or i + 1 >= len(parts):
            continue
        found = _VERSION.search(" ".join(parts[i + 1 : i + 3]))
        if found:
            shown.append(f"{tool} {found.group(0)}")
    return ", ".join(dict.fromkeys(shown)) or toolchain


_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")


def _language_versions() -> dict[str, str]:
    out = {}
    for name in languages.names():
        try:
            out[name] = languages.get(name).toolchain()
        except Exception as exc:
            out[name] = f"missing ({exc})"
    return out


def _environments() -> dict[str, Any]:
    """The hardened tier's and the image store's state (``assay image``)."""
    import shutil

    from ..images import ImageStore
    from ..sandbox.gvisor import available

    ok, detail = available()
    builder = shutil.which("mmdebstrap")
    return {
        "gvisor": {"available": ok, "detail": detail},
        "image_build": {
            "available": builder is not None,
            "detail": builder or "mmdebstrap not installed (apt-get install mmdebstrap)",
        },
        "images": [i.to_json() for i in ImageStore().list()],
    }
