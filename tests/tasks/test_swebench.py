"""SWE-bench-style rows on a small repository this test builds with git (no network)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from assay import Runner
from assay.errors import ValidationError
from assay.sessions import Session
from assay.tasks.swebench import from_row, load_rows

LIB = "def slug(text):\n    return text.lower()\n"
FIXED = "def slug(text):\n    return text.strip().lower().replace(' ', '-')\n"
OLD_TEST = "from lib import slug\n\n\ndef test_lower():\n    assert slug('AB') == 'ab'\n"
NEW_TEST = OLD_TEST + "\n\ndef test_spaces():\n    assert slug(' A b ') == 'a-b'\n"


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def _diff(repo: Path, path: str, text: str) -> str:
    (repo / path).write_text(text)
    out = _git(repo, "diff", "--", path)
    _git(repo, "checkout", "--", path)
    return out


@pytest.fixture(scope="module")
def row(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], Path]:
    mirrors = tmp_path_factory.mktemp("mirrors")
    repo = mirrors / "acme__slugs"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "lib.py").write_text(LIB)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_lib.py").write_text(OLD_TEST)
    (repo / "tests" / "conftest.py").write_text("import sys\nsys.path.insert(0, '.')\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    return {
        "instance_id": "acme__slugs-1",
        "repo": "acme/slugs",
        "base_commit": base,
        "patch": _diff(repo, "lib.py", FIXED),
        "test_patch": _diff(repo, "tests/test_lib.py", NEW_TEST),
        "FAIL_TO_PASS": json.dumps(["tests/test_lib.py::test_spaces"]),
        "PASS_TO_PASS": ["tests/test_lib.py::test_lower"],
        "problem_statement": "slug() should turn spaces into dashes",
    }, mirrors


def test_row_becomes_a_task(row: tuple[dict[str, object], Path]) -> None:
    data, mirrors = row
    task = from_row(data, mirrors)
    assert set(task.files) == {"lib.py", "tests/test_lib.py", "tests/conftest.py"}
    assert task.files["tests/test_lib.py"] == OLD_TEST.encode()  # the agent sees the old test
    assert task.tests == {"tests/test_lib.py": NEW_TEST}
    assert task.test_names == ("tests/test_lib.py::test_spaces", "tests/test_lib.py::test_lower")
    assert "tests/conftest.py" in task.protected_paths()


def test_verify_counts_fail_to_pass_and_pass_to_pass(
    runner: Runner, row: tuple[dict[str, object], Path]
) -> None:
    data, mirrors = row
    with Session.for_task(runner, from_row(data, mirrors)) as s:
        v = s.verify()
        assert (v.passed, v.total) == (1, 2)
        assert v.tests == {
            "tests/test_lib.py::test_spaces": "failed",
            "tests/test_lib.py::test_lower": "passed",
        }
        s.write_file("lib.py", FIXED)
        v = s.verify(diagnosis={"files": ["lib.py"], "functions": ["slug"]})
        assert v.verdict == "accepted" and v.newly_passing == ["tests/test_lib.py::test_spaces"]
        assert v.diagnosis_score == 1.0 and v.step_reward == pytest.approx(0.5 + 0.2)


def test_bad_rows_name_the_field(row: tuple[dict[str, object], Path], tmp_path: Path) -> None:
    data, mirrors = row
    with pytest.raises(ValidationError, match="repo"):
        from_row({**data, "repo": "acme/other"}, mirrors)
    with pytest.raises(ValidationError, match="commit"):
        from_row({**data, "base_commit": "0" * 40}, mirrors)
    with pytest.raises(ValidationError, match="test_patch"):
        from_row(
            {**data, "test_patch": "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n"}, mirrors
        )
    with pytest.raises(ValidationError, match="FAIL_TO_PASS"):
        from_row({**data, "FAIL_TO_PASS": "not json"}, mirrors)
    with pytest.raises(ValidationError, match="problem_statement"):
        from_row({k: v for k, v in data.items() if k != "problem_statement"}, mirrors)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(data) + "\n")
    assert load_rows(rows)[0]["instance_id"] == "acme__slugs-1"
