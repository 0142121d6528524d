"""Every ``--help`` page at 80 columns: nothing is lost to Rich markup (``'assay[ray]'`` was
shown as ``'assay'``: Rich read ``[ray]`` as a style tag) and no line is wider."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from assay.cli import app

#: A package extra or other bracketed word in a help text, written escaped (``\[ray]``) or not.
_BRACKETED = re.compile(r"[\w.'-]+\\?\[[\w,]+\]")


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():  # a group (Typer's own class)
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def _raw_texts(cmd: Any) -> list[str]:
    texts = [cmd.help or ""]
    texts += [getattr(p, "help", None) or "" for p in cmd.params]
    return texts


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "assay")
def test_help_keeps_bracketed_words_at_80_columns(path: tuple[str, ...]) -> None:
    cmd = dict(COMMANDS)[path]
    result = CliRunner().invoke(
        app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    for text in _raw_texts(cmd):
        for word in _BRACKETED.findall(" ".join(text.split())):
            assert word.replace("\\[", "[") in flat, f"{word!r} lost from {' '.join(path)} --help"


def test_the_ray_extra_is_named_in_serve_and_eval_help() -> None:
    for command in ("serve", "eval"):
        out = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80"}).output
        assert "'assay[ray]'" in " ".join(re.sub(r"[│]", " ", out).split()), command
