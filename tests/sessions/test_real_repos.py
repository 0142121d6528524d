"""Verification on real repositories in every layout Python projects use, converted from
SWE-bench rows with their own FAIL_TO_PASS / PASS_TO_PASS ids (see ``realrepos``): the gold
patch is accepted, no patch is rejected with exactly the FAIL_TO_PASS tests failing, a
half-reverted patch is rejected, and tests edited instead of code are a protected edit.
The agent works as one would: ``git apply`` and ``git stash`` in its workspace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realrepos import LAYOUTS, build, row_of

from assay import Runner
from assay.sessions import Session
from assay.tasks import AgentTask
from assay.tasks.swebench import from_row


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[AgentTask, dict[str, Any]]]:
    mirrors = tmp_path_factory.mktemp("mirrors")
    out = {}
    for name in LAYOUTS:
        built = build(mirrors, name)
        out[name] = (from_row(row_of(built), mirrors), built)
    return out


@pytest.fixture(params=LAYOUTS)
def repo(
    request: pytest.FixtureRequest,
    repos: dict[str, tuple[AgentTask, dict[str, Any]]],
    runner: Runner,
) -> Iterator[tuple[Session, dict[str, Any]]]:
    task, built = repos[request.param]
    with Session.for_task(runner, task) as session:
        yield session, built


def _apply(session: Session, patch: str) -> None:
    session.exec("cat > /tmp/fix.patch", stdin=patch)
    step = session.exec("git apply /tmp/fix.patch && git status --porcelain")
    assert step.exit_code == 0, step.stderr


def _f2p(built: dict[str, Any]) -> list[str]:
    ids: list[str] = json.loads(built["FAIL_TO_PASS"])
    return ids


def test_gold_patch_is_accepted(repo: tuple[Session, dict[str, Any]]) -> None:
    session, built = repo
    _apply(session, built["patch"])
    result = session.verify()
    assert (result.verdict, result.reward, result.reason) == ("accepted", 1.0, "")


def test_no_patch_fails_exactly_the_fail_to_pass_tests(
    repo: tuple[Session, dict[str, Any]],
) -> None:
    session, built = repo
    result = session.verify()
    failing = sorted(t for t, outcome in result.tests.items() if outcome == "failed")
    assert (result.verdict, failing) == ("failed", sorted(_f2p(built)))
    assert result.passed == len(built["PASS_TO_PASS"])
    assert "test_count_duplicates" in result.reason


def test_half_reverted_patch_is_rejected(repo: tuple[Session, dict[str, Any]]) -> None:
    session, built = repo
    _apply(session, built["half_patch"])
    result = session.verify()
    failing = [t for t, outcome in result.tests.items() if outcome == "failed"]
    assert (result.verdict, failing) == ("failed", [_f2p(built)[0]])


def test_tests_edited_instead_of_code_is_a_protected_edit(
    repo: tuple[Session, dict[str, Any]],
) -> None:
    session, built = repo
    path = built["test_file"]
    session.exec(f"printf 'def test_count_duplicates():\\n    pass\\n' >> {path}")
    result = session.verify()
    assert (result.verdict, result.protected_edits) == ("failed", [path])
    assert result.reason.startswith("protected paths changed")


def test_workspace_is_a_git_repository_at_the_base(repo: tuple[Session, dict[str, Any]]) -> None:
    session, built = repo
    assert session.exec("git status --porcelain").stdout == b""
    _apply(session, built["patch"])
    diff = session.exec("git diff --stat").stdout.decode()
    assert f"{built['pkg']}/sortedlist.py" in diff
    assert session.exec("git stash -q && git stash list | wc -l").stdout.strip() == b"1"
    assert session.verify().verdict == "failed"  # stashed: the base again
    session.exec("git stash pop -q")
    assert session.verify().verdict == "accepted"


def test_symlinks_are_kept(
    repos: dict[str, tuple[AgentTask, dict[str, Any]]], runner: Runner
) -> None:
    task, _ = repos["flat"]
    assert dict(task.links) == {"tests/readme.txt": "../README.rst"}
    with Session.for_task(runner, task) as session:
        assert session.exec("readlink tests/readme.txt").stdout == b"../README.rst\n"


def test_converted_rows_carry_limits(tmp_path: Path) -> None:
    from assay.tasks.types import task_limits

    built = build(tmp_path, "flat")
    task = from_row(row_of(built), tmp_path, task_limits(time_s=90, memory_mb=2048))
    assert (task.limits.time_s, task.limits.memory_mb) == (90.0, 2048)
    assert AgentTask.from_dict(task.to_dict()).limits == task.limits
