"""SWE-bench-style rows as agent tasks, from local repository mirrors (no network).

A row has ``instance_id``, ``repo`` (``owner/name``), ``base_commit``, ``patch`` (the
reference fix), ``test_patch``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (pytest node ids, as
lists or as JSON text, as SWE-bench ships them) and ``problem_statement``. The mirror of
``owner/name`` is ``<mirrors>/owner__name`` (SWE-bench's own naming), ``<mirrors>/owner/name``
or ``<mirrors>/name``, with or without ``.git``: a clone or a bare mirror holding
``base_commit``.

The workspace is the repository at ``base_commit`` (the agent sees the old tests); the files
the test patch touches, as patched, are the hidden tests (they replace the workspace's copies
in the verification sandbox, and are protected); the tests that count are
``FAIL_TO_PASS + PASS_TO_PASS``, matched as SWE-bench's harness matches them (an id it
stores cut at the first whitespace or newline of a parametrised id matches that test:
:mod:`assay.sessions.verify`). ``limits`` (time, memory, disk of one verification) are the
converter's to set: real test suites need more than the defaults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..types import Limits
from ._git import apply_patch, tree_at
from .patch import parse_patch
from .types import VERIFY_LIMITS, AgentTask

_REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement")


def mirror_of(mirrors: Path, repo: str) -> Path:
    """The local mirror of ``owner/name`` under ``mirrors``."""
    owner, _, name = repo.partition("/")
    candidates = [f"{owner}__{name}", f"{owner}/{name}", name] if name else [owner]
    for stem in candidates:
        for suffix in ("", ".git"):
            path = mirrors / f"{stem}{suffix}"
            if path.is_dir():
                return path
    raise ValidationError("repo", f"no mirror of {repo!r} under {mirrors} (tried {candidates})")


def _ids(row: Mapping[str, Any], key: str) -> list[str]:
    value = row.get(key, [])
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValidationError(key, "must be a list of test ids (or its JSON)") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(key, "must be a list of test ids")
    return value


def from_row(
    row: Mapping[str, Any], mirrors: str | Path, limits: Limits = VERIFY_LIMITS
) -> AgentTask:
    """One SWE-bench-style row as an :class:`AgentTask` whose verification runs under
    ``limits``; errors name the field."""
    for key in _REQUIRED:
        if not isinstance(row.get(key), str):
            raise ValidationError(key, "missing, or not a string")
    fail_to_pass, pass_to_pass = _ids(row, "FAIL_TO_PASS"), _ids(row, "PASS_TO_PASS")
    if not fail_to_pass and not pass_to_pass:
        raise ValidationError("FAIL_TO_PASS", "the row names no test at all")
    repo = mirror_of(Path(mirrors), row["repo"])
    base, links = tree_at(repo, row["base_commit"])
    patched = apply_patch(base, row["test_patch"], "test_patch")
    apply_patch(base, row["patch"], "patch")  # fails early, naming the field
    touched = set(parse_patch(row["test_patch"]).lines)
    tests = {}
    for path in sorted(touched):
        data = patched.get(path)
        if data is None:
            continue  # a test file the patch deletes
        try:
            tests[path] = data.decode()
        except UnicodeDecodeError:
            raise ValidationError("test_patch", f"{path} is not UTF-8 text") from None
    if not tests:
        raise ValidationError("test_patch", "touches no test file")
    return AgentTask(
        task_id=row["instance_id"],
        instructions=row["problem_statement"],
        files=base,
        tests=tests,
        test_names=tuple(dict.fromkeys([*fail_to_pass, *pass_to_pass])),
        reference_patch=row["patch"],
        limits=limits,
        links=links,
        metadata={
            "repo": row["repo"],
            "base_commit": row["base_commit"],
            "FAIL_TO_PASS": fail_to_pass,
            "PASS_TO_PASS": pass_to_pass,
            "format": "swe-bench",
        },
    )


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL (or JSON list) file of SWE-bench instances."""
    text = Path(path).read_text(encoding="utf-8")
    rows: list[Any]
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not all(isinstance(r, dict) for r in rows):
        raise ValidationError("rows", "each row must be a JSON object")
    return [dict(r) for r in rows]


__all__ = ["from_row", "load_rows", "mirror_of"]
