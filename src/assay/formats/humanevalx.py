"""HumanEval-X (THUDM/CodeGeeX) in six languages: one script test per task.

Python: the test program names the function directly and ends with ``check(entry)``; the
prompt runs first on the test side (two-sandbox harness). Other languages: the test is
compiled with the solution and judged through the language's marker harness."""

from __future__ import annotations

import re
from typing import Any

from .. import languages
from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..types import Limits

LIMITS = Limits(time_s=10.0, memory_mb=1024)


def problem(rec: dict[str, Any]) -> Problem:
    entry = rec.get("entry_point") or _entry(
        rec["declaration"] if "declaration" in rec else rec["prompt"]
    )
    options: dict[str, Any] = {"setup": rec["prompt"], "requires": [entry] if entry else []}
    test = TestCase(kind="script", code=rec["test"], options=options)
    return Problem(
        rec["task_id"],
        [test],
        limits=LIMITS,
        references=[rec["prompt"] + rec["canonical_solution"]],
        metadata={"prompt": rec["prompt"], "language": "python"},
    )


def _entry(source: str) -> str:
    """The last function the prompt declares (the one to implement)."""
    names = re.findall(r"^def (\w+)\(", source, flags=re.MULTILINE)
    return names[-1] if names else ""


#: HumanEval-X task-id prefix -> Assay language name
LANGUAGES = {
    "Python": "python",
    "CPP": "cpp",
    "Go": "go",
    "Java": "java",
    "JavaScript": "javascript",
    "Rust": "rust",
}


def native_problem(rec: dict[str, Any], language: str) -> Problem:
    """A compiled-together task: program = test_setup + prompt + solution + test, judged by
    the language's harness (:mod:`assay.judge.harness`)."""
    options: dict[str, Any] = {"setup": rec.get("test_setup", "")}
    test = TestCase(kind="script", code=rec["test"], options=options)
    prompt = rec["prompt"]
    if language == "rust" and rec.get("declaration", "").strip() not in prompt:
        # Rust's prompt is only the doc comment; the `use` lines and the signature are in
        # `declaration`, and a completion continues after them.
        prompt = prompt + rec["declaration"]
    return Problem(
        rec["task_id"],
        [test],
        limits=LIMITS,
        references=[prompt + rec["canonical_solution"]],
        metadata={"prompt": prompt, "language": language},
    )


def load(records: list[dict[str, Any]], language: str | None = None) -> list[Problem]:
    """``language`` (optional) must match the records' task ids (``CPP/0`` is C++)."""
    if language is not None:
        language = languages.canonical(language)  # js, c++, golang, ...
    out = []
    for n, rec in enumerate(records):
        prefix = str(rec.get("task_id", "")).split("/")[0]
        lang = LANGUAGES.get(prefix)
        if lang is None:
            raise ValidationError(
                f"records[{n}].task_id",
                f"unknown HumanEval-X language prefix {prefix!r}; known: {', '.join(LANGUAGES)}",
            )
        if language is not None and lang != language:
            raise ValidationError(
                "language",
                f"--language {language} but the dataset's tasks are {lang} ({prefix}/...)",
            )
        out.append(problem(rec) if lang == "python" else native_problem(rec, lang))
    return out
