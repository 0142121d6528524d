"""Language registry: one small module per language family, one line here per language."""

from __future__ import annotations

import os

from ..errors import UnsupportedLanguageError
from .base import Build, Language, Program, request, tool_version
from .bash import Bash
from .go import Go
from .java import Java
from .javascript import JavaScript, TypeScript
from .native import Executable, GccFamily
from .python import Python
from .rust import Rust

_REGISTRY: dict[str, Language] = {
    "python": Python(),
    "c": GccFamily("c", "gcc", "c11", (".c",), "main.c"),
    "cpp": GccFamily("cpp", "g++", "c++17", (".cpp", ".cc", ".cxx"), "main.cpp"),
    "rust": Rust(),
    "go": Go(),
    "java": Java(),
    "javascript": JavaScript(),
    "typescript": TypeScript(),
    "bash": Bash(),
    "executable": Executable(),
}
_ALIASES = {
    "py": "python",
    "python3": "python",
    "c++": "cpp",
    "cxx": "cpp",
    "exe": "executable",
    "rs": "rust",
    "golang": "go",
    "js": "javascript",
    "node": "javascript",
    "nodejs": "javascript",
    "ts": "typescript",
    "sh": "bash",
}


def get(name: str) -> Language:
    """The language called ``name`` or one of its usual aliases (``js``, ``py``, ``c++``...),
    case-insensitively."""
    try:
        return _REGISTRY[canonical(name)]
    except KeyError:
        raise UnsupportedLanguageError(name, sorted(_REGISTRY)) from None


def canonical(name: str) -> str:
    """Assay's own name for ``name`` if it is a registered name or an alias of one (``js`` ->
    ``javascript``), else ``name`` unchanged: the one place where aliases are resolved, so
    that every entry point (CLI, Python API, HTTP) accepts the same spellings."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    return key if key in _REGISTRY else name


def aliases() -> dict[str, str]:
    """Every accepted alias and the language it names."""
    return dict(_ALIASES)


def names() -> list[str]:
    return sorted(_REGISTRY)


def for_path(path: str) -> Language | None:
    ext = os.path.splitext(path)[1].lower()
    for lang in _REGISTRY.values():
        if ext in lang.extensions:
            return lang
    return None


__all__ = [
    "Build",
    "Language",
    "Program",
    "aliases",
    "canonical",
    "for_path",
    "get",
    "names",
    "request",
    "tool_version",
]
