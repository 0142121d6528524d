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
from ._archive import tar_of, tree_from_tar

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


def _quoted(path: str) -> str:
    """A path as ``git fast-import`` reads it (C-style quoted when it has to be)."""
    if '"' in path or "\n" in path or "\\" in path:
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return path


def repo_tar(files: Mapping[str, bytes], links: Mapping[str, str], message: str) -> bytes:
    """A tarball of the workspace as a git repository: ``files`` and ``links`` committed as
    one commit (``message``, a fixed date and author: one task, one commit id), the history
    in one pack, the index read from it, and an identity set so that ``git diff``, ``git
    status``, ``git stash`` and ``git commit`` work for the agent.

    The commit is streamed to ``git fast-import`` (one process, one pack): nothing of the
    workspace is written to the host's disk, and thousands of files take a fraction of a
    second (``git add`` of each file, then a repack, took seconds)."""
    stream = bytearray()
    entries = []
    for mark, (path, data) in enumerate(sorted(files.items()), 1):
        stream += b"blob\nmark :%d\ndata %d\n" % (mark, len(data)) + data + b"\n"
        entries.append(f"M 100644 :{mark} {_quoted(path)}\n")
    for mark, (path, target) in enumerate(sorted(links.items()), len(files) + 1):
        raw = os.fsencode(target)
        stream += b"blob\nmark :%d\ndata %d\n" % (mark, len(raw)) + raw + b"\n"
        entries.append(f"M 120000 :{mark} {_quoted(path)}\n")
    who = "assay <assay@localhost> 946684800 +0000"
    text = message.encode()
    stream += f"commit refs/heads/main\nauthor {who}\ncommitter {who}\n".encode()
    listing = "".join(entries).encode("utf-8", "surrogateescape")
    stream += b"data %d\n" % len(text) + text + b"\n" + listing + b"\n"
    with tempfile.TemporaryDirectory(prefix="assay-ws-") as tmp:
        root = Path(tmp)
        _git(["init", "-q", "-b", "main"], cwd=root)
        for key, value in (("user.name", "agent"), ("user.email", "agent@localhost")):
            _git(["config", key, value], cwd=root)
        _git(["fast-import", "--quiet"], cwd=root, stdin=bytes(stream))
        _git(["read-tree", "main"], cwd=root)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(root / ".git", arcname=".git")
        git_part = buf.getvalue()
    # The repository, then the work tree (one tar: the git part without its end blocks).
    return git_part[: _tar_end(git_part)] + tar_of(files, links)


def _tar_end(data: bytes) -> int:
    """Where a tar's end-of-archive blocks start (its members' end)."""
    pos = 0
    while pos + 512 <= len(data) and data[pos : pos + 512] != bytes(512):
        size = int(data[pos + 124 : pos + 136].rstrip(b"\0 ") or b"0", 8)
        pos += 512 + -(-size // 512) * 512
    return pos


_PATCH_PATHS = ("--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to ")


def _patch_paths(patch: str) -> set[str] | None:
    """The paths a unified diff names (``None`` when one is quoted: then every file)."""
    out = set()
    for line in patch.splitlines():
        for head in _PATCH_PATHS:
            if line.startswith(head):
                path = line[len(head) :].split("\t", 1)[0]
                if path.startswith('"'):
                    return None
                if head in ("--- ", "+++ ") and path[:2] in ("a/", "b/"):
                    path = path[2:]
                out.add(path)
    return out


def apply_patch(files: Mapping[str, bytes], patch: str, field: str) -> dict[str, bytes]:
    """``files`` with a unified diff applied (``git apply`` in a scratch folder holding the
    files the diff names: a repository of thousands of files is not written out)."""
    if not patch.strip():
        return dict(files)
    named = _patch_paths(patch)
    staged = set(files) if named is None else named & set(files)
    with tempfile.TemporaryDirectory(prefix="assay-task-") as tmp:
        root = Path(tmp)
        for path in staged:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[path])
        try:
            _git(["apply", "--whitespace=nowarn", "-"], cwd=root, stdin=patch.encode())
        except ValidationError as exc:
            raise ValidationError(field, f"does not apply: {exc.message}") from None
        out = {p: b for p, b in files.items() if p not in staged}
        for dirpath, _, names in os.walk(root):
            for name in names:
                full = Path(dirpath) / name
                if full.is_file() and not full.is_symlink():
                    out[str(full.relative_to(root))] = full.read_bytes()
        return out
