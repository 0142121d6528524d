"""``assay.client`` against a real ``assay serve``: a whole episode through the remote
session gives what the same steps give on an in-process ``Session``."""

from __future__ import annotations

import asyncio
import io
import tarfile

import pytest

from assay import AsyncSessionClient, Runner, Session, SessionClient, SessionEnded
from assay.client import RemoteError
from assay.errors import ValidationError
from assay.sessions import SessionLimits, SessionRefused
from assay.tasks import AgentTask, tar_of

pytestmark = pytest.mark.slow

LIMITS = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=64)
TESTS = """from ops import mul


def test_mul():
    assert mul(3, 4) == 12


def test_two():
    assert mul(2, 2) == 4
"""
#: mul() adds: one of the two hidden tests passes before the fix.
TASK = AgentTask(
    "mul",
    "mul() in ops.py is wrong; fix it.",
    {"ops.py": b"def mul(a, b):\n    return a + b\n"},
    {"test_ops.py": TESTS},
)
STEPS = [
    "printf '\\x00\\xff\\xfe raw'",  # not UTF-8: the exact bytes come back
    "echo err >&2; exit 3",
    "cd sub 2>/dev/null || mkdir sub && cd sub; export V=7",
    "pwd; echo $V",
]


def _outcome(step: object) -> tuple[object, ...]:
    """A step's result without its clocks (which differ from run to run)."""
    fields = ("exit_code", "signal", "stdout", "stderr", "timed_out", "reason")
    return tuple(getattr(step, f) for f in fields)


def test_remote_steps_equal_in_process_steps(serve_url: str, runner: Runner) -> None:
    with SessionClient(serve_url) as client, client.session(limits=LIMITS) as remote:
        with Session(runner, limits=LIMITS) as local:
            for command in STEPS:
                assert _outcome(remote.exec(command)) == _outcome(local.exec(command))
            assert remote.exec("cat", stdin=b"in\x00put").stdout == b"in\x00put"
            slow = remote.exec("echo a; sleep 20", idle_timeout_s=0.5)
            assert (slow.timed_out, slow.reason, slow.stdout) == (True, "idle_timeout", b"a\n")
            assert remote.run_cell("x = 6 * 7").status == "ok"
            assert remote.run_cell("x").display == local.run_cell("6 * 7").display


def test_files_tar_fork_and_close(serve_url: str) -> None:
    with SessionClient(serve_url) as client:
        s = client.session({"a.txt": "hi"}, limits=LIMITS, tar=tar_of({"t/b.bin": b"\x01\x02"}))
        s.write_file("src/x.bin", b"\x00\xff")
        assert s.read_file("src/x.bin") == b"\x00\xff"
        assert [e["name"] for e in s.list_files("src")] == ["x.bin"]
        s.delete_file("src/x.bin")
        with pytest.raises(SessionRefused):
            s.read_file("src/x.bin")
        with tarfile.open(fileobj=io.BytesIO(s.download_tar("t"))) as tar:
            assert tar.extractfile("b.bin").read() == b"\x01\x02"  # type: ignore[union-attr]
        child = s.fork()
        assert child.id != s.id
        assert child.exec("cat a.txt").stdout == b"hi"
        s.close()
        with pytest.raises(SessionEnded) as ended:
            s.exec("true")
        assert ended.value.reason == "closed"
        child.close()
        assert child.ended


def test_a_whole_episode_with_verification(serve_url: str) -> None:
    with SessionClient(serve_url) as client:
        with client.session(task=TASK, limits=LIMITS) as s:
            first = s.verify()
            assert (first.passed, first.total, first.verdict) == (1, 2, "failed")
            s.exec("sed -i 's/a + b/a * b/' ops.py")
            second = s.verify({"lines": ["ops.py:2"]})
            assert (second.passed, second.verdict, second.reward) == (2, "accepted", 1.0)
            rewards = s.episode_rewards()
            assert rewards.final_reward == 1.0
            assert len(rewards.step_rewards) == 2


def test_bad_requests_raise_what_session_raises(serve_url: str) -> None:
    with SessionClient(serve_url) as client:
        with pytest.raises(ValidationError) as bad:
            client.session(ttl_s=-1)
        assert bad.value.field == "ttl_s"
        with client.session(limits=LIMITS) as s:
            with pytest.raises(ValidationError) as outside:
                s.read_file("../etc/passwd")  # refused on the trusted side, as in-process
            assert outside.value.field == "path"
            with pytest.raises(SessionRefused):
                s.read_file("missing.txt")  # refused by the session's agent
    with SessionClient(serve_url + "/nowhere") as wrong, pytest.raises(RemoteError):
        wrong.session()


def test_async_client_drives_a_session(serve_url: str) -> None:
    async def episode() -> tuple[bytes, bytes]:
        async with AsyncSessionClient(serve_url) as client:
            async with await client.session(limits=LIMITS) as s:
                await s.write_file("n.txt", "41")
                step = await s.exec("echo $(( $(cat n.txt) + 1 ))")
                child = await s.fork()
                forked = await child.exec("cat n.txt")
                await child.close()
                return step.stdout, forked.stdout

    assert asyncio.run(episode()) == (b"42\n", b"41")


def test_a_connection_the_server_closed_while_idle_is_replaced(serve_url: str) -> None:
    """uvicorn closes a keep-alive connection idle for 5 s: the next step opens a new one
    (and runs once), it does not fail on the dead one."""
    import time

    with SessionClient(serve_url) as client, client.session(limits=LIMITS) as s:
        s.exec("echo 1 >> count")
        time.sleep(6)
        s.exec("echo 1 >> count")
        assert s.exec("wc -l < count").stdout == b"2\n"


def test_an_unreachable_server_is_a_remote_error_naming_the_url() -> None:
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with SessionClient(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(RemoteError, match=f"127.0.0.1:{port}/v1/sessions"):
            client.session()
