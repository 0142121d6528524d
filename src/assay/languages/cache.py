"""The compile cache: built artefacts on disk, addressed by what built them.

RL batches hold many identical programs, and HumanEval-X style tests are compiled with the
solution, so each distinct (language, toolchain, flags, source) is compiled once and the
artefact reused, across threads, processes and restarts.

- Stored outside every sandbox; a run gets its own copy in its tmpfs, so nothing a program
  does can change what the next run of the same source executes.
- Each file holds a SHA-256 of its content: a torn or tampered file is a miss, and deleted.
- Writes go to a temporary file renamed into place (atomic); readers never see half a file,
  and two processes building the same key at once both succeed.
- Bounded: past ``max_bytes`` the least recently used files go (``mtime`` is touched on every
  hit); one process evicts at a time (a lock file).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
from pathlib import Path

from .. import defaults
from .._fs import tree_size
from ..errors import ValidationError

_DIGEST = 32


class CompileCache:
    def __init__(self, directory: str | Path | None = None, max_bytes: int | None = None) -> None:
        self.directory = Path(directory) if directory is not None else defaults.compile_cache_dir()
        self.max_bytes = max_bytes if max_bytes is not None else defaults.COMPILE_CACHE_BYTES
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        self._approx = tree_size(self.directory)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        if len(key) < 8 or not all(c in "0123456789abcdef" for c in key):
            raise ValidationError("key", "cache keys are lowercase hex digests")
        return self.directory / key[:2] / key

    def get(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            self._count(hit=False)
            return None
        digest, data = blob[:_DIGEST], blob[_DIGEST:]
        if hashlib.sha256(data).digest() != digest:
            path.unlink(missing_ok=True)  # torn or altered: never run it
            self._count(hit=False)
            return None
        try:
            os.utime(path)  # recently used
        except OSError:
            pass
        self._count(hit=True)
        return data

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(hashlib.sha256(data).digest())
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        with self._lock:
            self._approx += len(data) + _DIGEST
            over = self._approx > self.max_bytes
        if over:
            self.evict()

    def evict(self) -> int:
        """Delete least recently used artefacts until the cache is under 90% of its bound;
        returns the bytes freed."""
        lock_path = self.directory / ".evict.lock"
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = []
            for sub in self.directory.iterdir():
                if not sub.is_dir():
                    continue
                for f in sub.iterdir():
                    try:
                        st = f.stat()
                    except OSError:
                        continue
                    entries.append((st.st_mtime, st.st_size, f))
            total = sum(size for _, size, _ in entries)
            target = int(self.max_bytes * 0.9)
            freed = 0
            for _, size, f in sorted(entries, key=lambda e: e[0]):
                if total - freed <= target:
                    break
                f.unlink(missing_ok=True)
                freed += size
            with self._lock:
                self._approx = total - freed
            return freed

    def _count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
