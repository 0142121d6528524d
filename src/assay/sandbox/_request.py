"""What a run request may hold, checked alike by both tiers before any sandbox is used:
its files' paths and sizes, and the verdict of files that take a run's whole memory."""

from __future__ import annotations

import os

from .. import defaults
from ..errors import ValidationError
from ..types import ExecResult, Limits
from ._run import RunRequest

_PAGE = 4096


def files_disk_bytes(files: list[tuple[str, bytes, int]]) -> int:
    """What ``files`` take of a run's tmpfs (which counts whole pages)."""
    return sum(-(-len(content) // _PAGE) * _PAGE for _p, content, _m in files)


def _validate_path(field: str, path: str) -> str:
    norm = os.path.normpath(path)
    if not path or path.startswith("/") or norm.startswith("..") or "\x00" in path or norm == ".":
        raise ValidationError(field, f"path {path!r} must be relative and stay inside the work dir")
    return norm


def _check_collisions(paths: list[str]) -> None:
    """Two files at one path, or a file where another needs a directory, cannot be staged."""
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            raise ValidationError(
                "files",
                f"path {path!r} is given twice (it may collide with the program's own file)",
            )
        seen.add(path)
    for path in paths:
        parent = os.path.dirname(path)
        while parent:
            if parent in seen:
                raise ValidationError(
                    "files", f"{parent!r} is a file but {path!r} needs it as a directory"
                )
            parent = os.path.dirname(parent)


def validate_request(
    req: RunRequest,
) -> tuple[list[tuple[str, bytes, int]], list[str]]:
    """The request's files and collected paths, normalised; ValidationError naming the
    field for anything a sandbox (of either tier) refuses."""
    if len(req.pass_fds) > 16:
        raise ValidationError("pass_fds", "at most 16 extra fds")
    if len(req.files) > defaults.RUN_MAX_FILES:
        raise ValidationError(
            "files",
            f"{len(req.files)} files, over the limit of {defaults.RUN_MAX_FILES} files per run "
            "(assay.defaults.RUN_MAX_FILES)",
        )
    files = [(_validate_path(f"files[{p!r}]", p), c, m) for p, c, m in req.files]
    _check_collisions([p for p, _, _ in files])
    collect = [_validate_path(f"collect[{p!r}]", p) for p in req.collect]
    need = files_disk_bytes(files)
    if need > req.limits.disk_mb << 20:
        raise ValidationError(
            "files",
            f"the input files take {need / (1 << 20):.1f} MiB, more than the run's disk "
            f"(limits.disk_mb={req.limits.disk_mb})",
        )
    return files, collect


def files_over_memory(files: list[tuple[str, bytes, int]], limits: Limits) -> ExecResult | None:
    """The ``memory_limit`` verdict of a run whose input files alone take its whole memory
    limit, decided before any sandbox is used (else None).

    The files live in the run's tmpfs, which both tiers charge to the run's memory: such a
    run is stopped while its files are staged, but whether the stop comes then or later,
    and whether the gVisor tier's host cgroup has room left by memory its sandbox frees
    meanwhile, depends on timing (CI saw one come back ``ok`` under gVisor). Said here, the
    verdict is the same on either tier and on a busy host."""
    need = files_disk_bytes(files)
    if need < limits.memory_mb << 20:
        return None
    return ExecResult(
        status="memory_limit",
        signal=9,
        stderr=b"assay: the input files do not fit the run's memory limit\n",
        peak_memory_bytes=need,
    )
