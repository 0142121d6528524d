"""Parsing Python that is someone else's: a dataset's, a task's, a submission's."""

from __future__ import annotations

import ast
import re
import warnings


def parse_quietly(source: str | bytes) -> ast.Module:
    """``ast.parse(source)`` with the warnings it may emit (an invalid escape such as ``"\\d"``
    in old dataset code) silenced: that code's style is not ours to report, and where
    warnings are errors it would not parse. Raises what ``ast.parse`` raises (``SyntaxError``,
    ``ValueError``, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


_MISSING = re.compile(r"No module named '([^']+)'")


def missing_modules(message: str) -> list[str]:
    """The modules a Python error message says are not installed (``ModuleNotFoundError``'s
    "No module named 'x'"), in order."""
    return [str(name) for name in _MISSING.findall(message)]
