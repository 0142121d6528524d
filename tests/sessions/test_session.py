"""Session: state across steps, step timeouts, files, tar, fork, cells, and how it ends."""

from __future__ import annotations

import io
import tarfile
import time

import pytest

from assay.errors import ValidationError
from assay.sessions import SessionEnded, SessionLimits, SessionRefused


def test_cwd_env_files_and_background_process_persist(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session(files={"task.txt": "fix me"})
    assert s.exec("cat task.txt").stdout == b"fix me"
    assert s.exec("mkdir -p src/pkg && cd src/pkg && export GREETING=hello").exit_code == 0
    step = s.exec("pwd; echo $GREETING; echo note > here.txt")
    assert step.stdout == b"/work/src/pkg\nhello\n"
    assert s.read_file("src/pkg/here.txt") == b"note\n"
    assert s.exec("unset GREETING").exit_code == 0
    assert s.exec('echo "[$GREETING]"').stdout == b"[]\n"
    pid = int(s.exec("sleep 300 >/dev/null 2>&1 & echo $!").stdout)
    time.sleep(0.2)
    assert s.exec(f"kill -0 {pid} && echo alive").stdout == b"alive\n"
    assert s.exec(f"kill -0 {pid} && echo alive").stdout == b"alive\n"
    assert s.steps == 8


def test_exit_code_stderr_stdin(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    step = s.exec("echo out; echo err >&2; exit 3")
    assert (step.exit_code, step.stdout, step.stderr) == (3, b"out\n", b"err\n")
    assert not step.timed_out and step.reason is None
    assert s.exec("tr a-z A-Z", stdin="shout\n").stdout == b"SHOUT\n"
    assert s.exec("pwd").stdout == b"/work\n"  # a step that exits still saves its cwd


def test_looping_step_is_stopped_with_its_output_and_the_session_answers(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    step = s.exec("echo before; while :; do :; done", timeout_s=1.0)
    assert step.timed_out and step.reason == "timeout"
    assert step.stdout == b"before\n"
    assert step.signal == 9 and step.exit_code is None
    assert 1.0 <= step.wall_s < 5.0
    assert s.exec("echo still here").stdout == b"still here\n"


def test_silent_step_hits_the_idle_timeout(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    step = s.exec("echo working; sleep 30; echo never", timeout_s=20, idle_timeout_s=0.5)
    assert step.timed_out and step.reason == "idle_timeout"
    assert step.stdout == b"working\n"
    assert step.wall_s < 10
    assert s.exec("echo ok").stdout == b"ok\n"


def test_output_is_capped_with_a_flag(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session(limits=SessionLimits(output_bytes=1000))
    step = s.exec("head -c 5000 /dev/zero; head -c 10 /dev/zero >&2")
    assert len(step.stdout) == 1000 and step.stdout_truncated
    assert len(step.stderr) == 10 and not step.stderr_truncated


def test_files_are_confined_to_the_workspace(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    s.write_file("a/b.bin", b"\x00\x01")
    s.write_file("/work/top.txt", "top")
    assert s.read_file("a/b.bin") == b"\x00\x01"
    names = {e["name"]: e["type"] for e in s.list_files()}
    assert names == {"a": "dir", "top.txt": "file"}
    s.delete_file("a")
    assert [e["name"] for e in s.list_files("/work")] == ["top.txt"]
    for bad in ("../etc/passwd", "/etc/passwd", "a/../../x"):
        with pytest.raises(ValidationError, match="path"):
            s.read_file(bad)
    s.exec("ln -s /etc out && ln -s /etc/passwd pw")
    with pytest.raises(SessionRefused, match="symlink"):
        s.read_file("pw")
    with pytest.raises(SessionRefused, match="symlink"):
        s.write_file("out/evil", "x")
    with pytest.raises(SessionRefused, match="no such file"):
        s.read_file("missing")
    assert s.exec("echo fine").stdout == b"fine\n"


def test_tar_round_trip(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    s.exec("mkdir d && echo 1 > d/one && echo 2 > two && ln -s two link")
    data = s.download_tar()
    names = sorted(m.name for m in tarfile.open(fileobj=io.BytesIO(data)).getmembers())
    assert names == ["d", "d/one", "link", "two"]
    other = open_session()
    other.upload_tar(data, "copy")
    assert other.exec("cat copy/d/one copy/link").stdout == b"1\n2\n"
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as tar:
        info = tarfile.TarInfo("../escape")
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(SessionRefused, match="leads out"):
        other.upload_tar(evil.getvalue())


def test_fork_copies_the_workspace_and_not_the_processes(open_session) -> None:  # type: ignore[no-untyped-def]
    parent = open_session()
    parent.exec("echo base > f.txt; mkdir sub; sleep 300 >/dev/null 2>&1 &")
    child = parent.fork()
    try:
        assert child.id != parent.id
        assert child.exec("cat f.txt").stdout == b"base\n"
        assert child.exec("pgrep -x sleep || echo none").stdout == b"none\n"
        child.exec("echo child > f.txt; touch child-only")
        assert parent.exec("cat f.txt; ls").stdout == b"base\nf.txt\nsub\n"
        assert parent.exec("pgrep -x sleep >/dev/null && echo running").stdout == b"running\n"
    finally:
        child.close()


def test_cells_keep_python_state(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    assert s.run_cell("x = 40\nprint('set')").stdout == "set\n"
    cell = s.run_cell("x + 2")
    assert cell.status == "ok" and cell.display == [{"text/plain": "42"}]
    err = s.run_cell("print(x); 1/0")
    assert err.status == "error" and err.stdout == "40\n"
    assert err.error[0]["ename"] == "ZeroDivisionError"
    slow = s.run_cell("import time; time.sleep(30)", timeout_s=0.5)
    assert slow.status == "timeout" and slow.restarted
    assert s.run_cell("'x' in dir()").display == [{"text/plain": "False"}]


def test_a_closed_session_says_why(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session()
    s.close()
    s.close()  # idempotent
    with pytest.raises(SessionEnded, match="closed") as info:
        s.exec("true")
    assert info.value.reason == "closed"
    assert s.info()["state"] == "ended"


@pytest.mark.parametrize(
    ("kwargs", "reason"), [({"ttl_s": 1.0}, "ttl"), ({"idle_ttl_s": 0.6}, "idle_ttl")]
)
def test_reaped_at_ttl_and_idle_ttl(open_session, kwargs, reason) -> None:  # type: ignore[no-untyped-def]
    s = open_session(**kwargs)
    s.exec("true")
    deadline = time.monotonic() + 10
    while not s.ended and time.monotonic() < deadline:
        time.sleep(0.1)
    assert s.end_reason == reason
    with pytest.raises(SessionEnded, match=reason):
        s.exec("true")


def test_cpu_budget_ends_the_session(open_session) -> None:  # type: ignore[no-untyped-def]
    s = open_session(limits=SessionLimits(cpu_s=1.0))
    with pytest.raises(SessionEnded, match="cpu_limit"):
        s.exec("while :; do :; done", timeout_s=60)


def test_bad_arguments_name_the_field(open_session, runner) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match="ttl_s"):
        open_session(ttl_s=-1)
    with pytest.raises(ValidationError, match=r"limits\.memory_mb"):
        SessionLimits(memory_mb=0)
    s = open_session()
    with pytest.raises(ValidationError, match="command"):
        s.exec("")
    with pytest.raises(ValidationError, match="timeout_s"):
        s.exec("true", timeout_s=0)
    with pytest.raises(ValidationError, match=r"files\["):
        open_session(files={".assay_agent.py": "x"})


def test_fork_streams_trees_links_and_modes(open_session) -> None:  # type: ignore[no-untyped-def]
    parent = open_session()
    parent.exec(
        "mkdir -p a/b/c empty; head -c 3000000 /dev/urandom > a/b/c/big; echo hi > a/x;"
        " ln -s a/x link; chmod 755 a/x; sha256sum a/b/c/big > sum; : > zero;"
        " ln -s /etc out; ln -s a dirlink; mkfifo pipe"
    )
    child = parent.fork()
    try:
        out = child.exec(
            "sha256sum -c sum && readlink link && stat -c %a a/x && ls -d empty"
            " && readlink out dirlink && stat -c %s zero && test ! -e pipe && echo no-fifo"
        )
        assert out.exit_code == 0, out
        assert out.stdout.splitlines()[1:] == [
            b"a/x",
            b"755",
            b"empty",
            b"/etc",
            b"a",
            b"0",
            b"no-fifo",
        ]
    finally:
        child.close()


def test_a_fork_that_fails_leaves_the_parent_usable_and_no_child(open_session) -> None:  # type: ignore[no-untyped-def]
    parent = open_session()
    # A file the agent cannot read stops the parent's packing half-way through the stream.
    parent.exec("head -c 2000000 /dev/zero > a; echo secret > b; chmod 000 b")
    before = _session_threads()
    with pytest.raises(SessionRefused, match="Permission"):
        parent.fork()
    assert parent.exec("echo alive").stdout == b"alive\n"
    assert _session_threads() == before  # the half-made child was closed, not left running


def _session_threads() -> int:
    import threading

    return sum(t.name.startswith("assay-session-") for t in threading.enumerate())


def test_per_step_cpu_and_memory_limits(open_session) -> None:  # type: ignore[no-untyped-def]
    limits = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=64)
    s = open_session(
        limits=SessionLimits(**{**limits.to_dict(), "step_cpu_s": 1, "step_memory_mb": 64})
    )
    spin = s.exec("python3 -c 'while True: pass'", timeout_s=20)
    assert spin.reason == "cpu_limit" and not spin.timed_out, spin
    assert 0.5 <= spin.cpu_s < 5  # (rusage lags RLIMIT_CPU by a tick or so)
    big = s.exec("python3 -c 'x = bytearray(200 << 20)'")
    assert big.exit_code == 1 and b"MemoryError" in big.stderr, big
    fits = s.exec("python3 -c 'x = bytearray(20 << 20); print(len(x))'")
    assert fits.stdout == b"20971520\n" and fits.reason is None
    assert s.exec("echo usable").stdout == b"usable\n"
    with pytest.raises(ValidationError, match="step_memory_mb"):
        SessionLimits(step_memory_mb=1)
