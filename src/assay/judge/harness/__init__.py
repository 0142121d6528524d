"""Test harnesses for languages whose tests run inside the submission's own program.

For Python, script tests run in a second sandbox that never executes submission code. For the
other languages (HumanEval-X, MultiPL-E) the dataset's test is a ``main`` or a test function
compiled together with the solution, so a harness module per language rewrites the test part
so that the program takes one line (a per-run secret marker) off stdin *before* any code of
the submission runs, closes stdin (or points it at /dev/null) so the submission cannot read
the marker back, and prints the marker as the last line of stdout only after every check has
passed. The judge accepts a run only if
it exited 0 *and* printed this run's marker: ``exit(0)`` before the checks, a fake "PASS"
line, or a swallowed assertion all fail.

Each module defines ``assemble(code: str, test: str, setup: str) -> str``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ...errors import ValidationError

Assemble = Callable[[str, str, str], str]

#: language name -> harness module (under assay.judge.harness); one line per language.
_MODULES: dict[str, str] = {
    "cpp": "cpp",
    "java": "java",
    "javascript": "javascript",
    "typescript": "javascript",
    "go": "go",
    "rust": "rust",
}


def get(language: str) -> Assemble:
    module = _MODULES.get(language)
    if module is None:
        raise ValidationError(
            "language",
            f"script tests are not supported for {language!r} (known: {', '.join(sorted(_MODULES))})",
        )
    fn: Assemble = importlib.import_module(f"{__name__}.{module}").assemble
    return fn


def languages() -> list[str]:
    return sorted(_MODULES)
