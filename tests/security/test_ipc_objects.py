"""Claim: no System V IPC object or POSIX message queue made in a run is there for a later
run. With the seccomp filter (the default), every IPC syscall is refused, so there is none to
make; with the filter opted out, each run gets an IPC namespace of its own.

IPC objects outlive the process that made them, so without either control a run could leave
data (or merely a count of objects, visible in the ids the kernel hands out) for the next run
of the same slot. The calls below are well formed (they succeed on the host), so only a
policy can make them fail.
"""

from __future__ import annotations

import json

import pytest

from assay import Runner, RunRequest, Sandbox, SandboxConfig

KEY = 0x5A5A17

MAKE = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
# mq_open is librt's before glibc 2.34 (a task image's older C library)
mq_open = getattr(libc, "mq_open", None) or ctypes.CDLL("librt.so.1", use_errno=True).mq_open
libc.shmat.restype = ctypes.c_void_p
mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
out = {}

def call(name, res):
    out[name] = [res, ctypes.get_errno() if res == -1 else 0]
    return res

shm = call("shmget", libc.shmget(KEY, 4096, 0o1000 | 0o666))  # IPC_CREAT
if shm >= 0:
    addr = libc.shmat(shm, None, 0)
    ctypes.memmove(addr, b"left by run 1", 13)
call("semget", libc.semget(KEY, 1, 0o1000 | 0o666))
call("msgget", libc.msgget(KEY, 0o1000 | 0o666))
call("mq_open", mq_open(b"/assay-ipc-test", 0o100 | 0o2, 0o666, None))  # O_CREAT|O_RDWR
print(json.dumps(out))
""".replace("KEY", str(KEY))

LOOK = r"""
import ctypes, json

libc = ctypes.CDLL(None, use_errno=True)
mq_open = getattr(libc, "mq_open", None) or ctypes.CDLL("librt.so.1", use_errno=True).mq_open
mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
print(json.dumps({
    "shmget": libc.shmget(KEY, 0, 0),
    "semget": libc.semget(KEY, 0, 0),
    "msgget": libc.msgget(KEY, 0),
    "mq_open": mq_open(b"/assay-ipc-test", 0),
}))
""".replace("KEY", str(KEY))

EPERM = 1


def _run(runner: Runner, source: str, mode: str) -> dict[str, object]:
    if mode == "python":
        req = RunRequest("python", ["/work/main.py"], [("main.py", source.encode(), 0o644)])
    else:  # exec mode: the C launcher (or a fork of the fork server) starts the interpreter
        req = RunRequest("exec", [runner.sandbox.config.python, "-c", source])
    result = runner.sandbox.execute(req)
    assert result.status == "ok", (result.status, result.stderr[-2000:])
    out: dict[str, object] = json.loads(result.stdout)
    return out


@pytest.mark.parametrize("mode", ["python", "exec"])
def test_ipc_syscalls_are_refused(mode: str) -> None:
    with Runner(Sandbox(pool_size=1)) as runner:
        made = _run(runner, MAKE, mode)
        assert made == {name: [-1, EPERM] for name in made}, made
        assert sorted(made) == ["mq_open", "msgget", "semget", "shmget"]
        assert _run(runner, LOOK, mode) == {k: -1 for k in made}


@pytest.mark.parametrize("mode", ["python", "exec"])
def test_without_seccomp_each_run_has_its_own_ipc_namespace(mode: str) -> None:
    sandbox = Sandbox(SandboxConfig(seccomp=False, insecure=True), pool_size=1)
    with Runner(sandbox) as runner:
        made = _run(runner, MAKE, mode)
        # The System V objects are made (a POSIX queue may be refused by the mqueue
        # filesystem's permissions); the next run, in the same slot, finds none of them.
        assert all(made[name] == [0, 0] for name in ("shmget", "semget", "msgget")), made
        assert _run(runner, LOOK, mode) == {k: -1 for k in made}
