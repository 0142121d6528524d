"""Host user ids for sandbox slots: one per slot, reused only once the slot is gone.

Per-user kernel quotas (inotify instances, ``fs.pipe-user-pages-soft``, pending signals, fds
in flight over SCM_RIGHTS) are counted per uid. With one uid for every sandbox, one run could
use a whole quota up and make concurrent runs fail; with a uid per slot, a run can only
exhaust its own. An id goes back to the pool when the slot's init has exited, which the
kernel reports only once every process of the slot's PID namespace is gone; until then it
is quarantined. Free ids are handed out least recently used first.
"""

from __future__ import annotations

import collections
import grp
import os
import pwd
import threading
import time

from ..errors import ConfigError, SandboxError
from ._zygote import readable

#: How long an id whose slot never reported its init (so no pidfd to watch) stays out.
QUARANTINE_S = 10.0


def check_range(base: int, count: int) -> None:
    """Refuse a range that a host account or group uses, or that is not a valid id range."""
    if count < 1 or base < 1 or base + count > 0xFFFFFFFE:
        raise ConfigError(
            f"sandbox id range {base}..{base + count - 1} is invalid "
            "(ASSAY_UID_BASE / ASSAY_UID_COUNT)"
        )
    end = base + count
    users = [p.pw_name for p in pwd.getpwall() if base <= p.pw_uid < end]
    groups = [g.gr_name for g in grp.getgrall() if base <= g.gr_gid < end]
    if users or groups:
        raise ConfigError(
            f"sandbox id range {base}..{end - 1} is used on this host by "
            f"{', '.join(users + groups)}: choose another with ASSAY_UID_BASE"
        )


class UidPool:
    """Ids ``base .. base+count-1``, one per live slot. Thread-safe."""

    def __init__(self, base: int, count: int) -> None:
        self.base = base
        self.count = count
        self._free: collections.deque[int] = collections.deque(range(base, base + count))
        self._held: list[tuple[int, int | None, float]] = []  # id, pidfd, since
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            if not self._free:
                self._sweep()
            if not self._free:
                raise SandboxError(
                    f"all {self.count} sandbox user ids are in use (ASSAY_UID_COUNT)"
                )
            return self._free.popleft()

    def give_back(self, uid: int, pidfd: int | None) -> None:
        """``uid``'s slot is retired; ``pidfd`` (owned by the pool from now) tells when its
        init, and with it every process of the slot, is gone."""
        with self._lock:
            self._held.append((uid, pidfd, time.monotonic()))
            self._sweep()

    def _sweep(self) -> None:
        keep = []
        now = time.monotonic()
        for uid, pidfd, since in self._held:
            if pidfd is None:
                gone = now - since >= QUARANTINE_S
            else:
                gone = readable(pidfd, 0)
                if gone:
                    os.close(pidfd)
            if gone:
                self._free.append(uid)
            else:
                keep.append((uid, pidfd, since))
        self._held = keep

    @property
    def in_quarantine(self) -> int:
        with self._lock:
            return len(self._held)

    def close(self) -> None:
        with self._lock:
            for _uid, pidfd, _since in self._held:
                if pidfd is not None:
                    os.close(pidfd)
            self._held = []
