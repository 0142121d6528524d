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
    "ts": "typescript",
    "sh": "bash",
}


def get(name: str) -> Language:
    key = _ALIASES.get(name.lower(), name.lower())
    try:
        return _REGISTRY[key]
    except KeyError:
        raise UnsupportedLanguageError(name, sorted(_REGISTRY)) from None


def names() -> list[str]:
    return sorted(_REGISTRY)


def for_path(path: str) -> Language | None:
    ext = os.path.splitext(path)[1].lower()
    for lang in _REGISTRY.values():
        if ext in lang.extensions:
            return lang
    return None


__all__ = ["Build", "Language", "Program", "for_path", "get", "names", "request", "tool_version"]
