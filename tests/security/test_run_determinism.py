"""Claim: runs on a reused slot cannot see traces of earlier runs in kernel counters that a
namespace scopes: every program is PID 2, and System V IPC ids start afresh (with the seccomp
filter no IPC object can be made at all: see test_ipc_objects.py).

Without this, a program could learn how many processes or IPC objects earlier runs made (a
channel between runs), and a program seeded from its pid would behave differently run to run.
"""

from __future__ import annotations

import pytest

from assay import Runner, Sandbox, SandboxConfig

PROBE = r"""
import ctypes, os
libc = ctypes.CDLL(None)
for _ in range(5):                      # leave traces for the next run
    if os.fork() == 0:
        os._exit(0)
    os.wait()
ids = (libc.shmget(1234, 4096, 0o1666), libc.semget(99, 1, 0o1666), libc.msgget(77, 0o1666))
print(os.getpid(), os.getppid(), *ids)
"""


@pytest.mark.parametrize(
    ("seccomp", "expected"), [(True, b"2 1 -1 -1 -1\n"), (False, b"2 1 0 0 0\n")]
)
def test_pids_and_ipc_ids_are_the_same_every_run(seccomp: bool, expected: bytes) -> None:
    config = SandboxConfig(seccomp=seccomp, insecure=not seccomp)
    with Runner(Sandbox(config, pool_size=1)) as runner:  # one slot, reused by every run
        outputs = {runner.run(PROBE).stdout for _ in range(4)}
    assert outputs == {expected}, outputs
