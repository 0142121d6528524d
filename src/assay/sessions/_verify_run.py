"""One run of a task's hidden tests on a snapshot of a workspace, in a fresh sandbox.

The trusted side builds the files the tests see: the snapshot, with every protected path
(and every file a test runner reads as configuration: ``conftest.py``, ``pytest.ini``,
``tox.ini``, ``setup.cfg``, ``pyproject.toml``, ``sitecustomize.py``, ``usercustomize.py``,
``*.pth``) reset to the task's own copy, then the hidden tests on top. The run reports one
line per test on a pipe, each prefixed with a secret made for this run; the trusted side
counts a test as passed only on such a line, within the task's set of test names.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import select
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from .. import defaults
from .._pysource import parse_quietly
from ..sandbox import RunRequest, files_disk_bytes
from ..tasks.strict import strict_source
from ..tasks.types import AgentTask
from ..types import ExecResult
from ._layout import (
    SITE_DIR,
    command_paths,
    has_pytest_config,
    import_roots,
    own_modules,
    project_metadata,
    pytest_command,
)

#: Where the workspace sits in the verification sandbox, and the runner's own folder.
ROOT = "ws"
RUNNER_DIR = ".assay_verify"
_CONFIG_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
_REPORT_CAP = 4 << 20
Execute = Callable[[RunRequest], ExecResult]


@cache
def _runner_source(
    name: str = "verify_runner.py", package: str = "assay.sessions._inside"
) -> bytes:
    return resources.files(package).joinpath(name).read_bytes()


def is_runner_config(path: str) -> bool:
    """A file a Python test run reads by its name alone (the agent may not plant one)."""
    name = os.path.basename(path)
    return name in _CONFIG_NAMES or name.endswith(".pth")


def prepare(
    task: AgentTask, snapshot: Mapping[str, bytes], links: Mapping[str, str] | None = None
) -> tuple[dict[str, bytes], list[str]]:
    """The files the hidden tests run against, and the protected paths the agent changed
    (``links``: the snapshot's symlinks, which count as the agent's version of a path)."""
    work = dict(snapshot)
    links = task.links if links is None else links
    guarded = set(task.protected_paths())
    guarded |= {p for p in (*snapshot, *task.files, *links) if is_runner_config(p)}
    if task.test_command:
        guarded |= command_paths(task.test_command, task.files)
    # The files the counted tests live in run as the task has them (a PASS_TO_PASS test
    # the agent rewrites would hide a regression).
    guarded |= {i.partition("::")[0] for i in task.test_names} & set(task.files)
    edits = []
    for path in sorted(guarded):
        original, current = task.files.get(path), snapshot.get(path)
        if original != current or task.links.get(path) != links.get(path):
            edits.append(path)
        if original is None:
            work.pop(path, None)
        else:
            work[path] = original
    for path, text in task.tests.items():
        work[path] = (strict_source(text) if task.strict_values else text).encode()
    return work, edits


def plain_tests(task: AgentTask, work: Mapping[str, bytes]) -> list[str] | None:
    """The node ids of the hidden tests if every file holds only top-level zero-argument
    ``test*`` functions and nothing needs pytest (no ``pytest`` import, no fixture, no
    decorator, no test class, no conftest, no pytest configuration of the project, no test
    of the workspace's own files to run): such tests run without importing pytest, which
    costs ~100 ms. ``None`` when pytest is needed."""
    if task.test_command or any(os.path.basename(p) == "conftest.py" for p in work):
        return None
    if has_pytest_config(task.files) or run_files(task, work) != sorted(task.tests):
        return None  # the project's pytest configuration, or tests of the workspace run
    ids = []
    for path, text in task.tests.items():
        try:
            tree = parse_quietly(text)
        except (SyntaxError, ValueError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(
                a.name.split(".")[0] in ("pytest", "unittest") for a in node.names
            ):
                return None
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "pytest",
                "unittest",
            ):
                return None
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                return None
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                args = node.args
                if (
                    isinstance(node, ast.AsyncFunctionDef)
                    or node.decorator_list
                    or args.args
                    or args.posonlyargs
                    or args.kwonlyargs
                    or args.vararg
                    or args.kwarg
                ):
                    return None
                ids.append(f"{path}::{node.name}")
    return ids


def external_imports(task: AgentTask) -> list[str]:
    """Top-level modules the hidden tests import that the task's workspace does not define
    (``numpy``, ``hypothesis``): the workspace may not shadow them in the verification (a
    ``numpy.py`` whose ``allclose`` always says yes)."""
    own = own_modules(task.files)
    names: set[str] = set()
    for text in task.tests.values():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return sorted(names - own - {p.split("/")[0].removesuffix(".py") for p in task.tests})


def static_ids(task: AgentTask) -> list[str]:
    """Node ids written in the hidden test files (functions and ``Test*`` classes' methods;
    parametrized tests get their ids from a run)."""
    ids = []
    for path, text in task.tests.items():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                ids.append(f"{path}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                ids += [
                    f"{path}::{node.name}::{m.name}"
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and m.name.startswith("test")
                ]
    return ids


def _by_file(ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in ids:
        path, _, name = node.partition("::")
        out.setdefault(path, []).append(name)
    return out


@dataclass
class TestRun:
    """What one verification run reported (outcomes only from lines with the run's secret).

    ``outcomes`` maps a pytest node id to ``(outcome, message)``; the outcome is ``passed``,
    ``failed``, ``skipped`` or ``xfailed``."""

    __test__ = False

    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)
    complete: bool = False
    tampered: list[str] = field(default_factory=list)
    collect_errors: dict[str, str] = field(default_factory=dict)  # node id -> message
    exit_code: int | None = None  # pytest's, or the test_command's
    result: ExecResult | None = None
    sandbox_error: str | None = None

    def tail(self) -> str:
        """The end of the run's own output (what it said before it stopped)."""
        res = self.result
        if res is None:
            return ""
        return (res.stdout[-300:] + res.stderr[-300:]).decode(errors="replace").strip()


def run_files(task: AgentTask, work: Mapping[str, bytes]) -> list[str]:
    """The test files a run collects: the hidden tests, and the files the counted test ids
    live in (a PASS_TO_PASS test in a file the test patch does not touch)."""
    named = {i.partition("::")[0] for i in task.test_names if "::" in i}
    return sorted(set(task.tests) | {p for p in named if p in work})


def _spec(task: AgentTask, work: Mapping[str, bytes], plain: list[str] | None) -> dict[str, Any]:
    roots = import_roots(task.files)
    command = pytest_command(task.test_command) if task.test_command else None
    if task.test_command and command is None:
        mode = "command"
    else:
        mode = "plain" if plain is not None else "pytest"
    return {
        "mode": mode,
        "root": f"/work/{ROOT}",
        "roots": [f"/work/{ROOT}/{r}".rstrip("/") for r in roots],
        "site": f"/work/{RUNNER_DIR}/{SITE_DIR}",
        "tests": run_files(task, work),
        "command": task.test_command,
        # A test_command that is one pytest invocation runs in the guarded pytest.
        "pytest_args": command[1] if command else None,
        "cwd": command[0] if command else ".",
        "ini": None if has_pytest_config(task.files) else f"/work/{RUNNER_DIR}/pytest.ini",
        "plain": _by_file(plain or []),
        # Read by the runner before any workspace code runs, and used instead of the disk.
        "pinned": sorted({*task.tests, *(p for p in work if os.path.basename(p) == "conftest.py")}),
        "guarded": external_imports(task),
        # The scripts a test_command runs as the tests (the task's test files and the files
        # the command names): a SystemExit that ends one counts only if they raised it.
        "trusted": sorted(
            set(task.tests)
            | command_paths(task.test_command or "", dict.fromkeys([*task.files, *task.tests], b""))
        ),
    }


def run_tests(
    execute: Execute,
    task: AgentTask,
    work: Mapping[str, bytes],
    links: Mapping[str, str] | None = None,
) -> TestRun:
    """Run the hidden tests against ``work`` (from :func:`prepare`) in a fresh sandbox."""
    plain = plain_tests(task, work)
    spec = _spec(task, work, plain)
    spec["links"] = dict(task.links if links is None else links)
    meta = project_metadata(task.files, import_roots(task.files))
    files = [(f"{ROOT}/{p}", data, 0o644) for p, data in work.items()]
    files += [(f"{RUNNER_DIR}/{p}", data, 0o444) for p, data in meta.items()]
    files += [
        (f"{RUNNER_DIR}/runner.py", _runner_source(), 0o444),
        (f"{RUNNER_DIR}/verify_boot.py", _runner_source("verify_boot.py"), 0o444),
        (f"{RUNNER_DIR}/verify_watch.py", _runner_source("verify_watch.py"), 0o444),
        # How a test script's process ends, as the sandbox's runs end (the boot imports it).
        (f"{RUNNER_DIR}/pyexit.py", _runner_source("pyexit.py", "assay.sandbox._inside"), 0o444),
        (f"{RUNNER_DIR}/spec.json", json.dumps(spec).encode(), 0o444),
        (f"{RUNNER_DIR}/pytest.ini", b"[pytest]\n", 0o444),
    ]
    # The workspace is staged on the run's tmpfs, which is memory charged to the run: the
    # task's disk and memory limits are what the tests may write and use on top of it (a
    # 100 MiB workspace left a task's tests 60 of its 160 MiB, and the task unverifiable).
    need_mb = -(-files_disk_bytes(files) // (1 << 20))
    limits = replace(
        task.limits,
        disk_mb=task.limits.disk_mb + need_mb,
        memory_mb=task.limits.memory_mb + need_mb,
    )
    if limits.disk_mb > defaults.VERIFY_MAX_DISK_MB:
        return TestRun(
            sandbox_error=f"the workspace takes {need_mb} MiB, over the verification disk limit "
            f"of {defaults.VERIFY_MAX_DISK_MB} MiB (assay.defaults.VERIFY_MAX_DISK_MB)"
        )
    secret = secrets.token_hex(16).encode()
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    req = RunRequest(
        "python",
        [f"/work/{RUNNER_DIR}/runner.py", f"/work/{RUNNER_DIR}/spec.json"],
        files,
        stdin=secret + b"\n",
        limits=limits,
        pass_fds=(os.dup(write_fd),),  # the run's copy; ours is closed when it returns
    )
    out = TestRun()
    box: dict[str, ExecResult | BaseException] = {}

    def _go() -> None:
        try:
            box["result"] = execute(req)
        except BaseException as exc:  # reported as our failure below
            box["error"] = exc
        finally:
            os.close(write_fd)  # with the run's copy gone too, the reader sees EOF

    thread = threading.Thread(target=_go, daemon=True, name="assay-verify")
    thread.start()
    chunks = _read_report(read_fd, thread, box)
    thread.join()
    got = box.get("result")
    if not isinstance(got, ExecResult):
        error = box.get("error")
        why = str(getattr(error, "message", "") or error)
        out.sandbox_error = f"verification run failed: {type(error).__name__}: {why}"
        return out
    out.result = got
    if got.status == "sandbox_error":
        out.sandbox_error = got.stderr[-500:].decode(errors="replace") or "sandbox_error"
        return out
    _parse_report(out, secret, b"".join(chunks))
    return out


def _read_report(read_fd: int, thread: threading.Thread, box: Mapping[str, object]) -> list[bytes]:
    chunks, size = [], 0
    poller = select.poll()
    poller.register(read_fd, select.POLLIN)
    settled: float | None = None  # when the run was over with no byte buffered
    try:
        # Until EOF: the run's copy closed, by the sandbox or by what relays it (the gVisor
        # tier's relay thread may still be writing the report after the run's answer is
        # back, late on a busy host). Only an executor that failed (and may never have
        # taken its copy) ends the read without EOF, once nothing more is buffered; and a
        # copy nobody closes ends it after defaults.VERIFY_REPORT_GRACE_S.
        while size < _REPORT_CAP:
            # poll, not select: a busy server's descriptors pass 1024, which select refuses.
            if not poller.poll(50):
                if thread.is_alive():
                    continue
                if "result" not in box:
                    break
                now = time.monotonic()
                settled = now if settled is None else settled
                if now - settled > defaults.VERIFY_REPORT_GRACE_S:
                    break
                continue
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(read_fd)
    return chunks


_OUTCOMES = frozenset({"passed", "failed", "skipped", "xfailed"})


def _parse_report(out: TestRun, secret: bytes, data: bytes) -> None:
    prefix = secret + b" "
    for line in data.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            msg = json.loads(line[len(prefix) :])
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("end"):
            out.complete = True
            out.tampered = [str(t) for t in msg.get("tampered") or []]
        elif isinstance(msg.get("id"), str):
            node = msg["id"]
            outcome = msg.get("outcome") if msg.get("outcome") in _OUTCOMES else "failed"
            if out.outcomes.get(node, ("passed", ""))[0] != "failed":  # a failure sticks
                out.outcomes[node] = (str(outcome), str(msg.get("message", ""))[:600])
        elif isinstance(msg.get("collect_error"), str):
            out.collect_errors[msg["collect_error"]] = str(msg.get("message", ""))[:600]
        elif isinstance(msg.get("exit"), int):
            out.exit_code = int(msg["exit"])
