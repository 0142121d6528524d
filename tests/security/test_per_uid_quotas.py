"""Claim: one run cannot use up a per-user kernel quota for concurrent runs.

Attack (red-team finding 2): every sandbox ran as uid 65534, and the kernel counts some
quotas per user: a run holding all 128 inotify instances, or pipes past
``fs.pipe-user-pages-soft``, made concurrent victims fail (``runtime_error``, or
``time_limit`` once their pipes shrank to one page). Each slot now runs as its own host uid
(a range checked at start to be unused on the host), so a run exhausts only its own quota:
the victim's verdict is the same alone and beside the attacker.
"""

from __future__ import annotations

import os
import pwd
import threading
import time

import pytest

from assay import ConfigError, Limits, Runner, Sandbox, SandboxConfig

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-slot host uids need root")

# Takes every inotify instance its user may have, and pipe buffers far past the per-user
# soft limit (accounted at creation, no memory used), then holds them.
ATTACKER = """
import ctypes, fcntl, os, time
libc = ctypes.CDLL(None, use_errno=True)
held = []
for _ in range(4):
    if os.fork() == 0:
        break
for _ in range(200):
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    held.append(fd)
for _ in range(40):
    try:
        r, w = os.pipe()
        fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        held += [r, w]
    except OSError:
        break
time.sleep(6)
"""

VICTIM = """
import ctypes, fcntl, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
print("inotify", "ok" if fd >= 0 else os.strerror(ctypes.get_errno()))
r, w = os.pipe()
print("pipe", fcntl.fcntl(w, 1032))  # F_GETPIPE_SZ
"""


def test_victim_unaffected_by_a_run_holding_per_user_quotas() -> None:
    with Runner(Sandbox(pool_size=3)) as runner:
        alone = runner.run(VICTIM)
        assert alone.status == "ok" and alone.stdout == b"inotify ok\npipe 65536\n", alone

        attack = threading.Thread(
            target=runner.run, args=(ATTACKER,), kwargs={"limits": Limits(wall_s=8, processes=16)}
        )
        attack.start()
        time.sleep(2.0)  # the attacker holds its quotas by now
        beside = [runner.run(VICTIM) for _ in range(3)]
        attack.join()
    for result in beside:
        assert (result.status, result.stdout) == (alone.status, alone.stdout), result


def test_concurrent_slots_run_as_distinct_unprivileged_uids() -> None:
    code = "import os, time; time.sleep(0.5); print(os.getuid(), os.getgid(), os.getgroups())"
    with Runner(Sandbox(pool_size=4)) as runner:
        results: list[bytes] = []
        threads = [
            threading.Thread(target=lambda: results.append(runner.run(code).stdout))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        config = runner.sandbox.config
    uids = set()
    for out in results:
        uid, gid, groups = out.decode().split(" ", 2)
        assert uid == gid and groups.strip() == "[]"
        assert config.uid_base <= int(uid) < config.uid_base + config.uid_count
        uids.add(uid)
    assert len(uids) == 4, results


def test_a_range_used_by_a_host_account_is_refused() -> None:
    taken = pwd.getpwnam("root").pw_uid  # uid 0 is always an account
    daemon = min(p.pw_uid for p in pwd.getpwall() if p.pw_uid > 0)
    with pytest.raises(ConfigError, match="used on this host"):
        Sandbox(SandboxConfig(uid_base=daemon, uid_count=2))
    with pytest.raises(ConfigError, match="invalid"):
        Sandbox(SandboxConfig(uid_base=taken, uid_count=1))
