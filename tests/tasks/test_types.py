"""The native task format: fields, workspace sources, errors naming the field, round trip."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from assay.errors import ValidationError
from assay.tasks import AgentTask, dump_tasks, load_tasks, tar_of

ROW = {
    "task_id": "t1",
    "instructions": "fix it",
    "files": {"a.py": "x = 1\n", "pkg/conftest.py": ""},
    "tests": {"test_a.py": "def test_a():\n    pass\n"},
    "protected": ["a.py"],
    "limits": {"time_s": 5, "memory_mb": 256},
}


def test_fields_and_protected_paths() -> None:
    task = AgentTask.from_dict(ROW)
    assert task.files == {"a.py": b"x = 1\n", "pkg/conftest.py": b""}
    assert task.limits.time_s == 5 and task.limits.memory_mb == 256
    assert task.protected_paths() == {"a.py", "test_a.py", "pkg/conftest.py"}


def test_archive_and_repo_sources(tmp_path: Path) -> None:
    archive = base64.b64encode(tar_of({"b.py": b"y = 2\n"})).decode()
    row = {**ROW, "files": None, "archive": archive}
    assert AgentTask.from_dict(row).files == {"b.py": b"y = 2\n"}
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    (repo / "c.py").write_text("z = 3\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    row = {**ROW, "files": None, "repo": "repo", "commit": "HEAD"}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    (task,) = load_tasks(tmp_path / "tasks.jsonl")
    assert task.files == {"c.py": b"z = 3\n"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"task_id": ""}, "task_id"),
        ({"files": {"../x": ""}}, "files"),
        ({"files": {"a": 3}}, "files['a']"),
        ({"archive": "!!"}, "files"),
        ({"files": None, "archive": "!!"}, "archive"),
        ({"tests": {}, "test_command": None}, "tests"),
        ({"protected": "a.py"}, "protected"),
        ({"limits": {"cpu": 1}}, "limits.cpu"),
        ({"wat": 1}, "wat"),
        ({"files": None, "repo": "/nonexistent", "commit": "HEAD"}, "repo"),
    ],
)
def test_errors_name_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        AgentTask.from_dict({**ROW, **change})
    assert info.value.field == field


def test_round_trip(tmp_path: Path) -> None:
    task = AgentTask.from_dict({**ROW, "reference_patch": "--- a/a.py\n+++ b/a.py\n"})
    binary = AgentTask.from_dict(
        {**ROW, "files": None, "archive": base64.b64encode(tar_of({"x": b"\xff"})).decode()}
    )
    assert dump_tasks([task, binary], tmp_path / "out.jsonl") == 2
    back = list(load_tasks(tmp_path / "out.jsonl"))
    assert back[0] == task and back[1].files == {"x": b"\xff"}
    (tmp_path / "bad.jsonl").write_text(json.dumps({**ROW, "task_id": 5}) + "\n")
    with pytest.raises(ValidationError, match="line 1: task_id"):
        list(load_tasks(tmp_path / "bad.jsonl"))
