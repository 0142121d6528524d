"""Claim: runs on a reused slot cannot see traces of earlier runs in kernel counters that a
namespace scopes: every program is PID 2, and System V IPC ids start afresh.

Without this, a program could learn how many processes or IPC objects earlier runs made (a
channel between runs), and a program seeded from its pid would behave differently run to run.
"""

from __future__ import annotations

from assay import Runner, Sandbox

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


def test_pids_and_ipc_ids_are_the_same_every_run() -> None:
    with Runner(Sandbox(pool_size=1)) as runner:  # one slot, reused by every run
        outputs = {runner.run(PROBE).stdout for _ in range(4)}
    assert outputs == {b"2 1 0 0 0\n"}, outputs
