"""Agent sessions on a real Ray cluster: held by a node agent, pinned to its node, state kept
across steps, files and fork as on one machine; when the node dies the session ends
``node_lost`` and is never opened again, empty. First, without a cluster: ``RemoteSession``
forwards every session method the agent takes calls for with Session's signature, checks
its arguments on the driver and counts the steps among them."""

from __future__ import annotations

import inspect
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from assay import Session, SessionManager
from assay.errors import ValidationError
from assay.executor.ray import RayExecutor, _sessions
from assay.executor.ray._agent import SESSION_METHODS, SESSION_STEPS
from assay.executor.ray._sessions import RemoteSession
from assay.scheduler import RuntimeEstimator
from assay.sessions import AsyncSession, ExecStep, SessionEnded, SessionRefused
from assay.tasks import AgentTask

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(600)]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    calls: list[tuple[str, tuple[Any, ...]]] = []

    def agent(node: object, method: str, *args: Any) -> Any:
        calls.append((method, args))
        return f"answer {len(calls)}"

    monkeypatch.setattr(_sessions, "_call", agent)
    return calls


def _session() -> RemoteSession:
    s = object.__new__(RemoteSession)
    s.id, s.node, s.end_reason, s.steps, s._step_s, s.busy = "sid", None, None, 0, 0.05, False
    return s


def test_every_forwarded_method_has_the_session_signature_and_docs() -> None:
    assert SESSION_STEPS < SESSION_METHODS and "exec" not in SESSION_METHODS  # typed: step
    for name in SESSION_METHODS:
        forward, local = getattr(RemoteSession, name), getattr(Session, name)
        assert forward is not local, name
        assert inspect.signature(forward) == inspect.signature(local), name
        assert forward.__doc__ == local.__doc__, name


def test_a_step_goes_to_the_node_with_its_arguments_and_counts(sent: list[Any]) -> None:
    s = _session()
    assert s.exec("ls", idle_timeout_s=2.0) == "answer 1"
    assert s.run_cell("x = 1") == "answer 2"
    assert s.read_file("a.txt") == "answer 3"
    assert sent == [
        ("session_step", ("sid", ExecStep("ls", idle_timeout_s=2.0))),
        ("session_call", ("sid", "run_cell", ("x = 1",), {})),
        ("session_call", ("sid", "read_file", ("a.txt",), {})),
    ]
    assert s.steps == 2  # reading a file is not a step


def test_a_wrong_argument_fails_on_the_driver_without_a_call(sent: list[Any]) -> None:
    s = _session()
    with pytest.raises(TypeError):
        s.exec(comand="ls")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="timeout_s"):
        s.exec("ls", timeout_s=-1)
    with pytest.raises(TypeError):
        s.write_file("a.txt")  # type: ignore[call-arg]
    assert sent == [] and s.steps == 0


def executor() -> RayExecutor:
    return RayExecutor(slots_per_node=1, records="off", estimator=RuntimeEstimator())


@pytest.fixture(scope="module")
def ex(ray_cluster: Any) -> Iterator[RayExecutor]:
    ray_cluster.ensure()
    with executor() as made:
        yield made


def test_a_session_on_the_cluster_keeps_state_and_files_across_steps(ex: RayExecutor) -> None:
    with Session(ex, files={"a.txt": "hi"}) as s:
        assert isinstance(s, RemoteSession)
        assert s.node_id in {n["node_id"] for n in ex.node_info()}
        s.exec("mkdir -p sub && cd sub && export X=41")
        step = s.exec("pwd; echo $((X + 1)); cat ../a.txt")
        assert step.exit_code == 0 and step.stdout == b"/work/sub\n42\nhi", step
        assert s.run_cell("y = 6 * 7").status == "ok"
        assert s.run_cell("print(y)").stdout == "42\n"
        s.write_file("bin.dat", bytes(range(256)))
        assert s.read_file("bin.dat") == bytes(range(256))
        assert {e["name"] for e in s.list_files()} >= {"a.txt", "bin.dat", "sub"}
        s.delete_file("bin.dat")
        with pytest.raises(SessionRefused):
            s.read_file("bin.dat")
        tar = s.download_tar()
        s.upload_tar(tar, "copy")
        assert s.read_file("copy/a.txt") == b"hi"
        assert s.steps == 4 and s.info()["state"] == "idle"
    assert s.ended and s.end_reason == "closed" and s.result is not None
    with pytest.raises(SessionEnded, match="closed"):
        s.exec("true")


def test_a_fork_is_on_the_same_node_with_a_copy_of_the_workspace(ex: RayExecutor) -> None:
    with Session(ex, files={"a.txt": "parent"}) as parent:
        parent.exec("echo more > b.txt")
        with parent.fork() as child:
            assert isinstance(child, RemoteSession) and child.id != parent.id
            assert child.node_id == parent.node_id
            assert child.read_file("b.txt") == b"more\n"
            child.write_file("a.txt", "child")
            assert parent.read_file("a.txt") == b"parent"


def test_a_manager_and_async_sessions_on_the_cluster(ex: RayExecutor) -> None:
    import asyncio

    m = SessionManager(ex, max_sessions=4)
    s = m.create(files={"x": "1"})
    assert m.get(s.id) is s and m.stats().open == 1
    forked = m.fork(s.id)
    assert forked.read_file("x") == b"1" and m.stats().open == 2
    m.close(s.id)
    with pytest.raises(SessionEnded, match="closed"):
        m.get(s.id)
    m.close_all()
    assert m.stats().open == 0 and m.stats().ending == 0

    async def main() -> bytes:
        async with await AsyncSession.create(ex) as a:
            return (await a.exec("echo async")).stdout

    assert asyncio.run(main()) == b"async\n"


def test_sessions_spread_over_the_nodes(ex: RayExecutor) -> None:
    sessions = [Session(ex) for _ in range(len(ex.node_info()))]
    try:
        assert len({s.node_id for s in sessions}) == len(sessions)
    finally:
        for s in sessions:
            s.close()


def test_a_session_whose_node_dies_ends_node_lost_and_is_not_reopened(cluster: Any) -> None:
    # A worker node of its own, so the shared cluster keeps its two.
    fresh = cluster.add()
    with executor() as ex:
        deadline = time.monotonic() + 120
        while fresh.node_id not in {n["node_id"] for n in ex.node_info()}:
            assert time.monotonic() < deadline, "no agent on the new node"
            time.sleep(0.2)
        m = SessionManager(ex)
        sessions = [m.create() for _ in ex.node_info()]  # one per node (fewest first)
        doomed = next(s for s in sessions if s.node_id == fresh.node_id)
        others = [s for s in sessions if s is not doomed]
        doomed.write_file("state.txt", "kept")
        cluster.remove(fresh)
        deadline = time.monotonic() + 60  # until the executor sees the node gone
        while fresh.node_id in {n["node_id"] for n in ex.node_info()}:
            assert time.monotonic() < deadline, "the removed node is still a member"
            time.sleep(0.2)
        with pytest.raises(SessionEnded) as ended:
            doomed.read_file("state.txt")
        assert ended.value.reason == "node_lost", ended.value
        assert doomed.info()["state"] == "ended" and doomed.end_reason == "node_lost"
        # Every later call says the same, and nothing was opened in its place.
        with pytest.raises(SessionEnded, match="node_lost"):
            doomed.exec("cat state.txt")
        with pytest.raises(SessionEnded, match="node_lost"):
            m.get(doomed.id)
        assert m.stats().ended == {"node_lost": 1}
        # Sessions on the other nodes carry on.
        for s in others:
            assert s.exec("echo alive").stdout == b"alive\n"
        # Its node agent killed with SIGKILL (the node stays): the same, at once.
        victim = others[0]
        pid = next(n["pid"] for n in ex.node_info() if n["node_id"] == victim.node_id)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(SessionEnded, match="node_lost"):
            victim.exec("true")
        assert others[1].exec("echo alive").stdout == b"alive\n"
        m.close_all()


def test_verify_runs_the_hidden_tests_on_the_hosting_node(ex: RayExecutor) -> None:
    broken = "def add(a, b):\n    return a - b\n"
    tests = (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    )
    row = {"task_id": "calc", "files": {"calc.py": broken}, "tests": {"test_h.py": tests}}
    with Session.for_task(ex, AgentTask.from_dict(row)) as s:
        assert isinstance(s, RemoteSession)
        first = s.verify()
        assert (first.passed, first.total, first.verdict) == (1, 2, "failed"), first
        s.write_file("calc.py", broken.replace("a - b", "a + b"))
        with s.fork() as child:  # a fork verifies against its parent's task and history
            assert child.verify().verdict == "accepted"
        assert s.verify().newly_passing == ["test_h.py::test_add"]
        assert s.episode_rewards().final_reward == 1.0
