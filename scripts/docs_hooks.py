"""MkDocs hooks: the reference pages generated from the code at build time.

The CLI reference comes from the Typer app's command tree, the HTTP reference from the
FastAPI app's OpenAPI spec, the metrics and alerts reference from ``assay.telemetry``'s metric
list and ``deploy/prometheus/assay-rules.yml``. None of them is written by hand, so none can
drift from the code; ``mkdocs build --strict`` (``make docs``, ``tests/docs/``) builds them
offline. Each ``*_markdown()`` function is also importable on its own (the tests do).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus" / "assay-rules.yml"

#: Generated page -> the function that writes it.
PAGES = {
    "reference/cli.md": "cli_markdown",
    "reference/http.md": "http_markdown",
    "reference/metrics.md": "metrics_page_markdown",
}


def _cell(text: str) -> str:
    """One Markdown table cell: no newlines, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# --- CLI ---------------------------------------------------------------------------------


def _commands() -> Iterator[tuple[Any, Any]]:
    """``(command, context)`` for the root and every sub-command, depth first."""
    import typer.main

    from assay.cli import app

    root = typer.main.get_command(app)

    def walk(cmd: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
        yield cmd, ctx
        if hasattr(cmd, "list_commands"):  # a group (Typer ships its own copy of click)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not getattr(sub, "hidden", False):
                    yield from walk(sub, sub.context_class(sub, info_name=name, parent=ctx))

    yield from walk(root, root.context_class(root, info_name="assay"))


def cli_markdown() -> str:
    """Every ``assay`` command: usage, help text, and each argument and option."""
    out = [
        "# CLI reference",
        "",
        "Generated from the `assay` command tree at build time: this is what "
        "`assay <command> --help` prints. Exit status: 0 when the sandbox did its job "
        "(whatever the program did), 2 on usage errors, 3 when the sandbox itself failed.",
        "",
    ]
    for cmd, ctx in _commands():
        path = ctx.command_path
        level = "#" * (2 + max(0, path.count(" ") - 1))  # assay, assay run: ##; deeper: ###
        out += [f"{level} `{path}`", ""]
        out += ["```text", f"{path} {' '.join(cmd.collect_usage_pieces(ctx))}", "```"]
        out.append("")
        help_text = (cmd.help or "").strip()
        if help_text:
            out += [_plain(help_text), ""]
        rows = []
        for param in cmd.get_params(ctx):
            record = param.get_help_record(ctx)
            if param.param_type_name == "argument":
                record = (param.name.upper(), getattr(param, "help", None) or "")
            if record is None:
                continue
            names, text = record
            rows.append(f"| `{_cell(names)}` | {_cell(_plain(text))} |")
        if rows:
            out += ["| argument / option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(out)


def _plain(text: str) -> str:
    """Typer help text without Rich markup (``[bold]``, ``[red]``...) and its form feed."""
    text = text.split("\f", 1)[0]
    text = text.replace("[/]", "")
    return re.sub(r"\[/?(?:bold|red|green|yellow|cyan|dim|italic|blue|magenta)\]", "", text)


# --- HTTP --------------------------------------------------------------------------------


def openapi_spec() -> dict[str, Any]:
    """The service's OpenAPI document, from the app itself (no server, no executor)."""
    from assay.server import create_app

    spec: dict[str, Any] = create_app().openapi()
    return spec


def _schema_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _type(schema: dict[str, Any]) -> str:
    """A schema's type in one short phrase, linking to named schemas."""
    if "$ref" in schema:
        name = _schema_name(schema["$ref"])
        return f"[{_short(name)}](#{_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(s) for s in schema[key])
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _type(schema["allOf"][0])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if kind == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        return f"map of {_type(extra) if isinstance(extra, dict) else 'any'}"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    return str(kind or "any")


def _short(name: str) -> str:
    """``assay__server__models__LimitsModel`` (FastAPI's name for a clash) -> readable."""
    return name.split("__")[-1] + (f" ({name.split('__')[-2]})" if "__" in name else "")


def http_markdown() -> str:
    """Every route of ``assay serve`` with its body and answers, then every schema."""
    spec = openapi_spec()
    out = [
        "# HTTP API reference",
        "",
        f"Generated at build time from the OpenAPI document of `assay serve` "
        f"({spec['info']['title']} {spec['info']['version']}). A running service serves the "
        "same document at `/openapi.json` and Swagger UI at `/docs`, from local files. With "
        "`ASSAY_API_TOKEN` set, every route but `/healthz` and `/readyz` needs "
        "`Authorization: Bearer <token>`.",
        "",
    ]
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            out += [f"## `{method.upper()} {path}`", ""]
            if op.get("summary"):
                out += [f"**{_cell(op['summary'])}**", ""]
            if op.get("description"):
                out += [op["description"].strip(), ""]
            params = op.get("parameters", [])
            if params:
                out += ["| parameter | in | type | required |", "|---|---|---|---|"]
                for p in params:
                    out.append(
                        f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} "
                        f"| {'yes' if p.get('required') else 'no'} |"
                    )
                out.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                out += [f"Request body ({media}): {_type(content.get('schema', {}))}", ""]
            out += ["| status | meaning | body |", "|---|---|---|"]
            for status, resp in op.get("responses", {}).items():
                schemas = [c.get("schema", {}) for c in resp.get("content", {}).values()]
                shown = ", ".join(_type(s) for s in schemas if s) or "-"
                out.append(f"| {status} | {_cell(resp.get('description', ''))} | {shown} |")
            out.append("")
    out += ["## Schemas", ""]
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        out += [f"### {_short(name)} {{ #{_anchor(name)} }}", ""]
        if schema.get("description"):
            out += [schema["description"].strip(), ""]
        props = schema.get("properties", {})
        if "enum" in schema:
            out += [f"One of {_type(schema)}.", ""]
        if props:
            required = set(schema.get("required", []))
            out += ["| field | type | required | default | meaning |", "|---|---|---|---|---|"]
            for field, sub in props.items():
                default = f"`{json.dumps(sub['default'])}`" if "default" in sub else ""
                out.append(
                    f"| `{field}` | {_type(sub)} | {'yes' if field in required else 'no'} "
                    f"| {_cell(default)} | {_cell(sub.get('description', ''))} |"
                )
            out.append("")
    return "\n".join(out)


# --- metrics and alerts --------------------------------------------------------------------


def alerts() -> list[dict[str, Any]]:
    """The alert rules of ``deploy/prometheus/assay-rules.yml``, in file order."""
    import yaml

    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def alerts_markdown() -> str:
    """The alerts as a Markdown table: name, severity, hold time, expression, runbook."""
    rows = [
        "| Alert | Severity | For | Fires when (PromQL) | Runbook |",
        "|---|---|---|---|---|",
    ]
    for rule in alerts():
        rows.append(
            f"| `{rule['alert']}` | {rule['labels']['severity']} | {rule.get('for', '-')} "
            f"| `{_cell(rule['expr'])}` | {_cell(rule['annotations']['runbook'])} |"
        )
    return "\n".join(rows) + "\n"


def metrics_page_markdown() -> str:
    """The metrics reference: every metric Assay exports, then every alert rule."""
    from assay.telemetry.metrics import metrics_markdown

    return "\n".join(
        [
            "# Metrics and alerts reference",
            "",
            "Generated at build time from the metric list in `assay.telemetry` and the rules "
            "in `deploy/prometheus/assay-rules.yml`. How to scrape, alert and read them: "
            "[Observability](../guides/observability.md).",
            "",
            "## Metrics",
            "",
            "Prometheus metrics of `assay serve`'s `/metrics` (an executor's "
            "`metrics.registry`); no per-job or per-problem labels.",
            "",
            metrics_markdown(),
            "## Alerts",
            "",
            "Each rule has a `runbook` annotation saying what to do first; "
            "`promtool test rules deploy/prometheus/assay-rules.test.yml` tests a firing and a "
            "quiet case of each. Severities: `page` (a training run is, or is about to be, "
            "starved or fed wrong rewards) and `ticket` (look today).",
            "",
            alerts_markdown(),
        ]
    )


# --- the hook ------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the site (MkDocs >= 1.6)."""
    from mkdocs.structure.files import File

    for uri, fn in PAGES.items():
        files.append(File.generated(config, uri, content=globals()[fn]()))
    return files
