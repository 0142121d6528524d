"""Reading local git repositories (``git archive``, ``git apply``): never the network."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import ValidationError
from .types import files_from_tar

_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "LANG": "C.UTF-8",
}


def _git(args: list[str], cwd: Path | None = None, stdin: bytes = b"") -> bytes:
    try:
        done = subprocess.run(
            ["git", "-c", "protocol.allow=never", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=_ENV,
            timeout=120,
            check=False,
        )
    except FileNotFoundError:
        raise ValidationError("repo", "git is not installed") from None
    if done.returncode != 0:
        raise ValidationError("repo", f"git {args[0]} failed: {done.stderr.decode()[-300:]}")
    return done.stdout


def files_at(repo: Path, commit: str) -> dict[str, bytes]:
    """Every regular file of ``repo`` at ``commit`` (a local repository or bare mirror)."""
    if not repo.exists():
        raise ValidationError("repo", f"{repo} does not exist")
    if commit.startswith("-"):
        raise ValidationError("commit", f"{commit!r} is not a commit")
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=repo)
    except ValidationError:
        raise ValidationError("commit", f"{commit!r} is not a commit of {repo}") from None
    return files_from_tar(_git(["archive", "--format=tar", commit], cwd=repo), "repo")


def apply_patch(files: Mapping[str, bytes], patch: str, field: str) -> dict[str, bytes]:
    """``files`` with a unified diff applied (``git apply`` in a scratch folder)."""
    if not patch.strip():
        return dict(files)
    with tempfile.TemporaryDirectory(prefix="assay-task-") as tmp:
        root = Path(tmp)
        for path, data in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            _git(["apply", "--whitespace=nowarn", "-"], cwd=root, stdin=patch.encode())
        except ValidationError as exc:
            raise ValidationError(field, f"does not apply: {exc.message}") from None
        out: dict[str, bytes] = {}
        for dirpath, _, names in os.walk(root):
            for name in names:
                full = Path(dirpath) / name
                if full.is_file() and not full.is_symlink():
                    out[str(full.relative_to(root))] = full.read_bytes()
        return out
