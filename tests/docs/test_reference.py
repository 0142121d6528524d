"""The generated reference pages (scripts/docs_hooks.py) cover what the code has: every CLI
command, every HTTP route and schema, every metric and alert rule (issue 32). They are made
from the code at build time, so these tests check the generators, not a copy."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

from .snippets import ROOT


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts/docs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_page_has_every_command_and_option(hooks: ModuleType) -> None:
    page = hooks.cli_markdown()
    commands = list(hooks._commands())
    assert len(commands) > 20  # the root, 6 commands, 5 groups and their sub-commands
    for cmd, ctx in commands:
        assert f"`{ctx.command_path}`" in page, ctx.command_path
        for param in cmd.get_params(ctx):
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert opt in page, f"{ctx.command_path} {opt}"
    assert "[/]" not in page and "[bold]" not in page  # Rich markup is stripped


def test_http_page_has_every_route_and_schema(hooks: ModuleType) -> None:
    spec = hooks.openapi_spec()
    page = hooks.http_markdown()
    for path, ops in spec["paths"].items():
        for method in ops:
            assert f"## `{method.upper()} {path}`" in page, (method, path)
    for name in spec["components"]["schemas"]:
        assert f"{{ #{hooks._anchor(name)} }}" in page, name
    assert "{ #schema-runcoderequest }" in page
    # Every link to a schema names an anchor the page has.
    anchors = set(re.findall(r"\{ #(schema-[a-z0-9-]+) \}", page))
    linked = set(re.findall(r"\]\(#(schema-[a-z0-9-]+)\)", page))
    assert linked <= anchors, linked - anchors


def test_metrics_page_is_the_metric_list_and_the_rules(hooks: ModuleType) -> None:
    from assay.telemetry.metrics import metrics_markdown

    page = hooks.metrics_page_markdown()
    assert metrics_markdown() in page
    for rule in hooks.alerts():
        assert f"| `{rule['alert']}` | {rule['labels']['severity']} |" in page, rule["alert"]
    assert "AssayDown" in page and "AssayNodeDown" in page


def test_every_generated_page_is_in_the_navigation(hooks: ModuleType) -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for uri in hooks.PAGES:
        assert f": {uri}" in nav, uri
