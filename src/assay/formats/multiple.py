"""MultiPL-E (nuprl/MultiPL-E): HumanEval and MBPP translated to many languages.

Rows: ``name`` (``HumanEval_0_has_close_elements``), ``language`` (MultiPL-E's code: ``cpp``,
``java``, ``js``, ``ts``, ``go``, ``rs``, ``sh``, ``py``, ...), ``prompt``, ``tests``,
``stop_tokens``. The program is prompt + completion + tests, so each task is one ``script``
test: Python's is judged by the two-sandbox harness (the prompt runs on the test side), the
others by the language's marker harness.
"""

from __future__ import annotations

import re
from typing import Any

from .. import languages
from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)

#: MultiPL-E language code -> Assay language name (only languages Assay can run).
LANGUAGES = {
    "py": "python",
    "cpp": "cpp",
    "java": "java",
    "js": "javascript",
    "ts": "typescript",
    "go": "go",
    "rs": "rust",
    "sh": "bash",
}


def _entry(name: str, prompt: str) -> str:
    m = re.match(r"(?:HumanEval|mbpp)_\d+_(\w+)$", name)
    if m:
        return m.group(1)
    names = re.findall(r"^def (\w+)\(", prompt, flags=re.MULTILINE)
    return names[-1] if names else ""


def problem(rec: dict[str, Any], n: int) -> Problem:
    for field in ("name", "language", "prompt", "tests"):
        if not isinstance(rec.get(field), str):
            raise ValidationError(f"records[{n}].{field}", "missing or not a string")
    code = rec["language"]
    lang = LANGUAGES.get(code)
    if lang is None:
        raise ValidationError(
            f"records[{n}].language",
            f"MultiPL-E language {code!r} is not supported; supported: {', '.join(LANGUAGES)}",
        )
    if lang == "python":
        entry = _entry(rec["name"], rec["prompt"])
        options: dict[str, Any] = {"setup": rec["prompt"], "requires": [entry] if entry else []}
    else:
        options = {"setup": ""}
    return Problem(
        rec["name"],
        [TestCase(kind="script", code=rec["tests"], options=options)],
        limits=LIMITS,
        metadata={
            "prompt": rec["prompt"],
            "language": lang,
            "stop_tokens": list(rec.get("stop_tokens") or []),
        },
    )


def load(records: list[dict[str, Any]], language: str | None = None) -> list[Problem]:
    """All rows, or with ``language`` (an Assay name or a MultiPL-E code) only that language's."""
    wanted = LANGUAGES.get(language, languages.canonical(language)) if language else None
    problems = [problem(r, n) for n, r in enumerate(records)]
    if wanted is not None:
        problems = [p for p in problems if p.metadata["language"] == wanted]
        if not problems:
            raise ValidationError("language", f"no MultiPL-E rows in {language!r}")
    return problems
