"""A task's workspace as a session receives it: a git repository at the task's commit."""

from __future__ import annotations

from ..errors import ValidationError
from ._git import repo_tar
from .types import AgentTask, tar_of


def workspace_tar(task: AgentTask) -> bytes:
    """The task's files and symlinks as a git repository with one commit (cached on the
    task): the agent's ``git diff`` shows what verification compares, and ``git status`` /
    ``git stash`` work. Without git on the host, the plain files."""
    cached: bytes | None = getattr(task, "_assay_workspace_tar", None)
    if cached is not None:
        return cached
    commit = task.metadata.get("base_commit") or task.metadata.get("commit") or ""
    message = f"{task.task_id}" + (f" at {commit}" if commit else "")
    try:
        data = repo_tar(task.files, task.links, message)
    except ValidationError:  # git is missing or refused: the files still make the workspace
        data = tar_of(task.files, task.links)
    object.__setattr__(task, "_assay_workspace_tar", data)
    return data


__all__ = ["workspace_tar"]
