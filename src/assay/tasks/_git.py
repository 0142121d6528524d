"""Reading local git repositories (``git archive``, ``git apply``): never the network."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import ValidationError
from .types import tree_from_tar

_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "LANG": "C.UTF-8",
}


def _git(
    args: list[str],
    cwd: Path | None = None,
    stdin: bytes = b"",
    env: Mapping[str, str] | None = None,
) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-c", "protocol.allow=never", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env={**_ENV, **(env or {})},
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
    return tree_at(repo, commit)[0]


def tree_at(repo: Path, commit: str) -> tuple[dict[str, bytes], dict[str, str]]:
    """Every regular file and symlink (path -> target) of ``repo`` at ``commit``."""
    if not repo.exists():
        raise ValidationError("repo", f"{repo} does not exist")
    if commit.startswith("-"):
        raise ValidationError("commit", f"{commit!r} is not a commit")
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=repo)
    except ValidationError:
        raise ValidationError("commit", f"{commit!r} is not a commit of {repo}") from None
    return tree_from_tar(_git(["archive", "--format=tar", commit], cwd=repo), "repo")


def repo_tar(files: Mapping[str, bytes], links: Mapping[str, str], message: str) -> bytes:
    """A tarball of the workspace as a git repository: ``files`` and ``links`` committed as
    one commit (``message``), the history packed into one file, and an identity set so that
    ``git diff``, ``git status``, ``git stash`` and ``git commit`` work for the agent."""
    with tempfile.TemporaryDirectory(prefix="assay-ws-") as tmp:
        root = Path(tmp)
        for path, data in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for path, dest in links.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(dest, target)
        fixed = "2000-01-01T00:00:00+0000"  # the same task gives the same commit id
        env = {
            "GIT_AUTHOR_DATE": fixed,
            "GIT_COMMITTER_DATE": fixed,
            "GIT_AUTHOR_NAME": "assay",
            "GIT_AUTHOR_EMAIL": "assay@localhost",
            "GIT_COMMITTER_NAME": "assay",
            "GIT_COMMITTER_EMAIL": "assay@localhost",
        }
        _git(["init", "-q", "-b", "main"], cwd=root)
        for key, value in (("user.name", "agent"), ("user.email", "agent@localhost")):
            _git(["config", key, value], cwd=root)
        _git(["add", "-A", "-f"], cwd=root)
        _git(["commit", "-q", "--no-verify", "-m", message], cwd=root, env=env)
        _git(["repack", "-adq"], cwd=root)
        _git(["prune-packed"], cwd=root)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(root / ".git", arcname=".git")
            for path in sorted(files):
                tar.add(root / path, arcname=path)
            for path in sorted(links):
                tar.add(root / path, arcname=path)
        return buf.getvalue()


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
