"""The native agent-task format: one JSON object per line.

A task is what an agent episode is trained on: a workspace to start from, instructions, and
tests the agent never sees. Fields (``AgentTask.from_dict``):

- ``task_id`` (str), ``instructions`` (str);
- the workspace, exactly one of: ``files`` (path -> text), ``archive`` (a tarball, base64:
  its regular files and symlinks) or ``repo`` + ``commit`` (a local git repository, read
  with ``git archive``: nothing is fetched); ``links`` (optional, path -> target) are the
  workspace's symlinks (kept as symlinks in the session and in verification);
- ``tests`` (path -> text): hidden pytest files, run with the workspace on ``sys.path``; a
  test path may name a file the workspace also has (the hidden version is what runs);
- ``test_command`` (optional): a shell command run in the verification sandbox instead of
  pytest. One pytest invocation (``pytest ARGS``, ``python -m pytest ARGS``, after an
  optional ``cd DIR &&``) runs in verification's own guarded pytest, with a test per node
  id; any other command's exit status is the one test's outcome, counted only if every
  Python process it started exited normally. The files it names are protected;
- ``test_names`` (optional): the pytest node ids that count (default: every test collected
  from ``tests``); SWE-bench rows set it to ``FAIL_TO_PASS + PASS_TO_PASS``;
- ``protected`` (paths the agent must not change; the test paths, the files the
  ``test_names`` live in, the files a ``test_command`` names, pytest's configuration
  files and every ``conftest.py`` of the workspace are always protected), ``reference_patch`` (optional unified diff),
  ``limits`` (optional: ``time_s``, ``memory_mb``, ``disk_mb`` of one verification; the
  staged workspace comes on top of ``disk_mb`` and of ``memory_mb``), ``metadata``;
- ``strict_values`` (optional, default false): ``==`` in the hidden tests' asserts refuses
  non-builtin objects compared with plain values (:mod:`assay.tasks.strict`).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import ValidationError
from ..types import Limits
from ._archive import (
    MAX_WORKSPACE_BYTES,
    check_path,
    files_from_tar,
    tar_of,
    tree_from_tar,
)

#: Largest workspace a task may carry (all files together).
#: Limits of one verification run unless the task sets its own.
VERIFY_LIMITS = Limits(time_s=10.0, memory_mb=512)
_FIELDS = {
    "task_id",
    "instructions",
    "files",
    "archive",
    "repo",
    "commit",
    "tests",
    "test_command",
    "test_names",
    "protected",
    "reference_patch",
    "limits",
    "metadata",
    "strict_values",
    "links",
}


def _text_map(field_name: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValidationError(field_name, "must be an object of path -> text")
    out = {}
    for path, text in value.items():
        norm = check_path(field_name, path)
        if not isinstance(text, str):
            raise ValidationError(f"{field_name}[{path!r}]", "must be text")
        out[norm] = text
    return out


@dataclass(frozen=True)
class AgentTask:
    """One agent task (see the module docstring for the fields)."""

    task_id: str
    instructions: str
    files: Mapping[str, bytes]
    tests: Mapping[str, str]
    test_command: str | None = None
    test_names: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    reference_patch: str | None = None
    limits: Limits = VERIFY_LIMITS
    metadata: Mapping[str, Any] = field(default_factory=dict)
    strict_values: bool = False
    #: The workspace's symlinks (path -> target, as the repository stores them).
    links: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not self.task_id:
            raise ValidationError("task_id", "must be a non-empty string")
        if not isinstance(self.instructions, str):
            raise ValidationError("instructions", "must be a string")
        if not self.tests and not self.test_command:
            raise ValidationError("tests", "a task needs hidden tests (or a test_command)")
        if self.test_command is not None and not isinstance(self.test_command, str):
            raise ValidationError("test_command", "must be a string")
        if self.reference_patch is not None and not isinstance(self.reference_patch, str):
            raise ValidationError("reference_patch", "must be a unified diff as text")

    # -- what the verifier needs --------------------------------------------------------------
    def protected_paths(self) -> frozenset[str]:
        """Paths whose content is the task's, whatever the agent does to them: the declared
        ones, the hidden test paths, and every ``conftest.py`` (pytest runs them)."""
        conftests = {p for p in self.files if os.path.basename(p) == "conftest.py"}
        return frozenset({*self.protected, *self.tests, *conftests})

    # -- (de)serialisation --------------------------------------------------------------------
    @classmethod
    def from_dict(cls, row: Mapping[str, Any], base_dir: Path | None = None) -> AgentTask:
        """Parse one row; every error names its field. ``repo`` paths are relative to
        ``base_dir`` (the JSONL file's folder) when not absolute."""
        if not isinstance(row, Mapping):
            raise ValidationError("task", "each line must be a JSON object")
        unknown = set(row) - _FIELDS
        if unknown:
            raise ValidationError(sorted(unknown)[0], "unknown field")
        sources = [k for k in ("files", "archive", "repo") if row.get(k) is not None]
        links: dict[str, str] = {}
        if len(sources) != 1:
            raise ValidationError("files", "give exactly one of files, archive, repo + commit")
        if "files" in sources:
            files = {p: t.encode() for p, t in _text_map("files", row["files"]).items()}
        elif "archive" in sources:
            if not isinstance(row["archive"], str):
                raise ValidationError("archive", "must be a base64 tarball")
            try:
                raw = base64.b64decode(row["archive"], validate=True)
            except ValueError:
                raise ValidationError("archive", "is not valid base64") from None
            files, links = tree_from_tar(raw)
        else:
            from ._git import tree_at

            repo, commit = row.get("repo"), row.get("commit")
            if not isinstance(repo, str) or not repo:
                raise ValidationError("repo", "must be a path to a local git repository")
            if not isinstance(commit, str) or not commit:
                raise ValidationError("commit", "must name a commit of repo")
            path = Path(repo)
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            files, links = tree_at(path, commit)
        if row.get("links") is not None:
            links.update(_link_map(row["links"]))
        protected = row.get("protected") or []
        if not isinstance(protected, list):
            raise ValidationError("protected", "must be a list of paths")
        names = row.get("test_names") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValidationError("test_names", "must be a list of pytest node ids")
        return cls(
            task_id=cast(str, row.get("task_id")),  # checked in __post_init__
            instructions=row.get("instructions", ""),
            files=files,
            tests=_text_map("tests", row.get("tests") or {}),
            test_command=row.get("test_command"),
            test_names=tuple(names),
            protected=tuple(check_path("protected", p) for p in protected),
            reference_patch=row.get("reference_patch"),
            limits=_limits(row.get("limits")),
            metadata=dict(row.get("metadata") or {}),
            strict_values=_flag("strict_values", row.get("strict_values", False)),
            links=links,
        )

    def to_dict(self) -> dict[str, Any]:
        """A row of the native format (the workspace as ``files`` when it is all UTF-8 text,
        else as ``archive``)."""
        row: dict[str, Any] = {"task_id": self.task_id, "instructions": self.instructions}
        try:
            row["files"] = {p: b.decode() for p, b in self.files.items()}
        except UnicodeDecodeError:
            row["archive"] = base64.b64encode(tar_of(self.files, self.links)).decode()
        row["tests"] = dict(self.tests)
        for key in ("test_command", "reference_patch"):
            if getattr(self, key) is not None:
                row[key] = getattr(self, key)
        if self.test_names:
            row["test_names"] = list(self.test_names)
        if self.protected:
            row["protected"] = list(self.protected)
        if self.limits != VERIFY_LIMITS:
            row["limits"] = {k: getattr(self.limits, k) for k in _LIMIT_KEYS}
        if self.metadata:
            row["metadata"] = dict(self.metadata)
        if self.strict_values:
            row["strict_values"] = True
        if self.links:
            row["links"] = dict(self.links)
        return row


def _flag(field_name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(field_name, f"must be true or false, got {value!r}")
    return value


def _link_map(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(t, str) for t in value.values()):
        raise ValidationError("links", "must be an object of path -> link target")
    return {check_path("links", p): str(t) for p, t in value.items()}


_LIMIT_KEYS = ("time_s", "memory_mb", "disk_mb")


def _limits(value: object) -> Limits:
    if value is None:
        return VERIFY_LIMITS
    if isinstance(value, Limits):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError("limits", "must be an object {time_s, memory_mb, disk_mb}")
    bad = set(value) - set(_LIMIT_KEYS)
    if bad:
        raise ValidationError(f"limits.{sorted(bad)[0]}", "unknown field")
    try:
        return Limits(
            time_s=float(value.get("time_s", VERIFY_LIMITS.time_s)),
            memory_mb=int(value.get("memory_mb", VERIFY_LIMITS.memory_mb)),
            disk_mb=int(value.get("disk_mb", VERIFY_LIMITS.disk_mb)),
        )
    except (TypeError, ValueError) as exc:
        raise ValidationError("limits", str(exc)) from None


def task_limits(
    time_s: float | None = None, memory_mb: int | None = None, disk_mb: int | None = None
) -> Limits:
    """The limits of one verification, the defaults where not given (what converters take)."""
    given = {"time_s": time_s, "memory_mb": memory_mb, "disk_mb": disk_mb}
    return _limits({k: v for k, v in given.items() if v is not None})


def load_tasks(path: str | Path) -> Iterator[AgentTask]:
    """The tasks of a JSONL file; a bad line raises naming its line number and field."""
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValidationError(f"line {number}", f"not JSON: {exc}") from None
            try:
                yield AgentTask.from_dict(row, base_dir=path.parent)
            except ValidationError as exc:
                raise ValidationError(f"line {number}: {exc.field}", exc.message) from None


def dump_tasks(tasks: Iterable[AgentTask], path: str | Path) -> int:
    """Write tasks as JSONL; returns how many."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(json.dumps(task.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


__all__ = [
    "MAX_WORKSPACE_BYTES",
    "VERIFY_LIMITS",
    "AgentTask",
    "check_path",
    "dump_tasks",
    "files_from_tar",
    "load_tasks",
    "tar_of",
    "task_limits",
    "tree_from_tar",
]
