"""Claim: wave-1 attacks run as steps of a session are contained as in a judged run, and
the session either still answers or ends with a reason naming the limit it hit.

Each attack runs for real as a shell step (fork bomb, memory bomb, disk fill, network
egress, host files, escaping /work through the file API, a runaway output) against a
session with small limits; afterwards the host has no process of it left.
"""

from __future__ import annotations

import pytest

from assay.sessions import Session, SessionEnded, SessionLimits, SessionRefused

LIMITS = SessionLimits(cpu_s=30, memory_mb=128, processes=24, disk_mb=16, output_bytes=4096)


@pytest.fixture
def session(runner):  # type: ignore[no-untyped-def]
    with Session(runner, limits=LIMITS) as s:
        yield s


def test_fork_bomb_is_held_by_the_pids_limit(no_idle_runner, host, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    # A backgrounded bomb outlives its step (background processes live until close) and
    # keeps the session's pids limit full; the host is unaffected and close ends it all.
    s = Session(no_idle_runner, limits=LIMITS)
    try:
        step = s.exec("b() { b | b & }; b; sleep 1; echo survived", timeout_s=5)
        assert b"fork" in step.stderr and b"Resource temporarily unavailable" in step.stderr
        if not gvisor:  # (under gVisor the program's processes are inside its kernel; the
            # host sees gVisor's stubs, and the cap is RLIMIT_NPROC there, as stderr shows)
            procs = host.sandbox_uid_processes(no_idle_runner.sandbox.zygote_pid)
            assert len(procs) <= LIMITS.processes + 1  # + the slot's init
        try:
            after = s.exec("echo alive", timeout_s=5)
            assert after.stdout in (b"alive\n", b"")
        except SessionRefused as exc:  # the agent itself could not fork the step
            assert "Resource temporarily unavailable" in str(exc)
    finally:
        s.close()
    assert host.leftovers(no_idle_runner, host.new_tag()) == []


def test_memory_bomb_is_stopped(session) -> None:  # type: ignore[no-untyped-def]
    try:
        step = session.exec("python3 -c 'x = bytearray(1 << 30); print(len(x))'", timeout_s=20)
    except SessionEnded as exc:  # the cgroup's OOM killer took the whole run
        assert exc.reason == "memory_limit", exc
        return
    assert step.exit_code != 0 and b"1073741824" not in step.stdout
    assert session.exec("echo alive").stdout == b"alive\n"


def test_disk_fill_stops_at_the_session_disk(session) -> None:  # type: ignore[no-untyped-def]
    step = session.exec("head -c 100M /dev/zero > /work/big; echo rc=$?; du -sm /work | cut -f1")
    assert b"No space left" in step.stderr or b"File too large" in step.stderr, step
    assert int(step.stdout.split()[-1]) <= LIMITS.disk_mb
    assert session.exec("rm /work/big; echo freed").stdout == b"freed\n"


def test_no_network(session) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import socket\n"
        "for addr in [('1.1.1.1', 53), ('127.0.0.1', 22), ('10.0.0.1', 80)]:\n"
        "    try:\n"
        "        s = socket.socket()\n"
        "        s.settimeout(2)\n"
        "        s.connect(addr)\n"
        "        print('connected', addr)\n"
        "    except OSError as e:\n"
        "        print('refused', e.errno)\n"
    )
    session.write_file("net.py", code)
    step = session.exec("python3 net.py", timeout_s=20)
    assert b"connected" not in step.stdout, step
    assert step.stdout.count(b"refused") == 3, step.stderr.decode()


def test_host_files_are_not_there(session) -> None:  # type: ignore[no-untyped-def]
    step = session.exec(
        "for f in /etc/shadow /root /home /var/log /proc/kallsyms /sys/kernel; do "
        "cat $f 2>/dev/null | head -c 1 | wc -c; done"
    )
    assert step.stdout.split() == [b"0"] * 6, step
    assert session.exec("touch /usr/evil 2>&1; echo rc=$?").stdout.endswith(b"rc=1\n")


def test_output_flood_is_capped_and_the_session_answers(session) -> None:  # type: ignore[no-untyped-def]
    step = session.exec("yes flood", timeout_s=2)
    assert step.stdout_truncated and len(step.stdout) == LIMITS.output_bytes
    assert step.timed_out and step.reason == "timeout"
    assert session.exec("echo alive").stdout == b"alive\n"


def test_the_step_cannot_reach_the_agents_channel(session) -> None:  # type: ignore[no-untyped-def]
    # fds 3+ of the agent (its socket to the trusted side) are closed in every step.
    # (listed by Python: coreutils' ls cannot stat /proc/self/fd under gVisor, EINVAL)
    step = session.exec(
        "python3 -c \"import os; print(*sorted(os.listdir('/proc/self/fd'), key=int))\""
    )
    assert step.stdout.split() == [b"0", b"1", b"2", b"3"], step  # 3: listdir's own dir fd
    assert session.exec("echo alive").stdout == b"alive\n"
