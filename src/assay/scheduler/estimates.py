"""Runtime estimates learned from history, kept across restarts in an embedded SQLite store.

The scheduler orders work by how long it will take, and it only knows that from what it has
seen. Each finished job updates an exponentially weighted mean for a chain of keys, from the
most specific to the most general (for example ``problem|language``, ``language``, ``*``);
an estimate comes from the first key with history, scaled by the job's size when the key is a
general one. Keys are opaque strings: the scheduler knows nothing of problems or languages.

The store is written in the background of normal work (every ``flush_every`` updates and on
:meth:`close`), in one transaction, so a crash loses at most the last few observations and
never corrupts the file (SQLite's journal).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

#: Weight of a new observation in the running mean: recent runs matter most (a problem's
#: tests or the machine may change), but one outlier does not swing the estimate.
ALPHA = 0.3


class RuntimeEstimator:
    """Per-key running means of job seconds; thread-safe; ``path=None`` keeps them in memory."""

    def __init__(
        self, path: str | Path | None = None, *, default_s: float = 0.05, flush_every: int = 256
    ) -> None:
        self.default_s = default_s
        self.flush_every = flush_every
        self._lock = threading.Lock()
        self._means: dict[str, tuple[float, int]] = {}
        self._dirty: set[str] = set()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=10.0)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS estimates ("
                "key TEXT PRIMARY KEY, mean_s REAL NOT NULL, n INTEGER NOT NULL, "
                "updated REAL NOT NULL)"
            )
            self._db.commit()
            for key, mean, n in self._db.execute("SELECT key, mean_s, n FROM estimates"):
                self._means[key] = (float(mean), int(n))

    def estimate(self, keys: Sequence[str], size: float = 1.0) -> float:
        """Seconds expected for a job known by ``keys`` (most specific first).

        The first key is taken as is; a more general key's mean is per unit of ``size``
        (e.g. per test), so it is multiplied by it.
        """
        with self._lock:
            for i, key in enumerate(keys):
                hit = self._means.get(key)
                if hit is not None:
                    return hit[0] if i == 0 else hit[0] * size
        return self.default_s * size

    def observe(self, keys: Sequence[str], seconds: float, size: float = 1.0) -> None:
        """Record that a job known by ``keys`` took ``seconds`` (``size`` units of work)."""
        if seconds < 0 or not keys:
            return
        per_unit = seconds / max(size, 1e-9)
        with self._lock:
            for i, key in enumerate(keys):
                value = seconds if i == 0 else per_unit
                old = self._means.get(key)
                if old is None:
                    self._means[key] = (value, 1)
                else:
                    self._means[key] = (old[0] + ALPHA * (value - old[0]), old[1] + 1)
                self._dirty.add(key)
            due = len(self._dirty) >= self.flush_every
        if due:
            self.flush()

    def known(self, key: str) -> tuple[float, int] | None:
        """(mean seconds, observations) for ``key``, or None."""
        with self._lock:
            return self._means.get(key)

    def flush(self) -> None:
        with self._lock:
            if self._db is None or not self._dirty:
                self._dirty.clear()
                return
            rows = [(k, *self._means[k], time.time()) for k in self._dirty]
            self._dirty.clear()
            with self._db:
                self._db.executemany(
                    "INSERT INTO estimates(key, mean_s, n, updated) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET mean_s=excluded.mean_s, n=excluded.n, "
                    "updated=excluded.updated",
                    rows,
                )

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
