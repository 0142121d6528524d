"""Workspace paths and tarballs: how a task's workspace is checked, read from a tarball and
written as one (what a session is seeded with). Below ``types`` and ``_git``, which both
use it."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
from collections.abc import Mapping

from .. import defaults
from ..errors import ValidationError
from ._tar import read_tree

MAX_WORKSPACE_BYTES = defaults.TASK_MAX_WORKSPACE_BYTES


def check_path(field_name: str, path: object) -> str:
    """A workspace-relative path: no absolute paths, no ``..``, no NUL."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ValidationError(field_name, f"path {path!r} must be a non-empty string")
    norm = os.path.normpath(path.removeprefix("/work/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../") or norm == ".":
        raise ValidationError(field_name, f"path {path!r} must stay inside the workspace")
    return norm


def files_from_tar(data: bytes, field_name: str = "archive") -> dict[str, bytes]:
    """The regular files of a tarball (gzip or plain), by normalised path; anything else
    (links, devices) is left out. Sizes are bounded before anything is read."""
    return tree_from_tar(data, field_name)[0]


def tree_from_tar(
    data: bytes, field_name: str = "archive"
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The regular files and the symlinks (path -> target) of a tarball (gzip or plain),
    by normalised path; other members (devices, hard links) are left out. Sizes are
    bounded before anything is read."""
    out: dict[str, bytes] = {}
    links: dict[str, str] = {}
    total = 0

    def _count(_name: str, size: int) -> None:
        nonlocal total
        total += size
        if total > MAX_WORKSPACE_BYTES:
            raise ValidationError(
                field_name,
                f"workspace larger than {MAX_WORKSPACE_BYTES >> 20} MiB "
                "(assay.defaults.TASK_MAX_WORKSPACE_BYTES)",
            )

    fast = read_tree(data, _count)
    if fast is not None:
        for name, content in fast[0]:
            with contextlib.suppress(ValidationError):  # a path out of the tree: left out
                out[check_path(field_name, name)] = content
        for name, target in fast[1]:
            with contextlib.suppress(ValidationError):
                links[check_path(field_name, name)] = target
        return out, links
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar:
                if not (member.isfile() or member.issym()):
                    continue
                try:
                    path = check_path(field_name, member.name)
                except ValidationError:
                    continue
                if member.issym():
                    links[path] = member.linkname
                    continue
                _count(path, member.size)
                fh = tar.extractfile(member)
                if fh is not None:
                    out[path] = fh.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ValidationError(field_name, f"not a readable tarball: {exc}") from None
    return out, links


def tar_of(files: Mapping[str, bytes], links: Mapping[str, str] | None = None) -> bytes:
    """A plain tarball of ``files`` and ``links`` (what a session is seeded with)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        for path, target in sorted((links or {}).items()):
            info = tarfile.TarInfo(path)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buf.getvalue()
