"""Records to any fsspec URL (S3, GCS, memory, file) without giving up crash safety.

Object stores cannot append, and a record held only in memory dies with the process. So every
record is first appended to a local spool segment (the same crash-safe JSONL as local targets);
whole, closed segments are then uploaded under the same name and the spool copy removed. A
crashed run leaves its segments in the spool, and the next writer for the same URL uploads them.

Uploads run on a background thread, never in the thread that writes: an object store that is
down (connection retries take seconds) must not stall the executor's workers. The thread closes
the open segment every ``upload_interval_s`` so light traffic still reaches the store promptly,
and backs off while uploads fail. Nothing is uploaded twice: a segment is removed from the
spool only after its object exists, and a writer that finds an object of the same name and the
same content (its predecessor was killed between the upload and the removal) just removes its
copy.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import defaults
from ._jsonl import JsonlWriter, claim_segment, fresh_segment_name, is_segment_name
from ._store import Store, resolve

__all__ = ["FsspecWriter", "SpoolStats", "default_spool_dir"]

log = logging.getLogger(__name__)


def default_spool_dir(url: str) -> Path:
    """``~/.cache/assay/spool/<hash of url>``: one spool per destination, stable across runs."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return defaults.SPOOL_DIR.expanduser() / digest


@dataclass(frozen=True, slots=True)
class SpoolStats:
    """What a remote writer has done, for metrics: records still only in the local spool,
    records uploaded and failed upload attempts (both counted since this writer started)."""

    spooled: int
    uploaded: int
    upload_errors: int


class _SpoolCounter:
    """Records (lines) in the spool's segments, counted incrementally.

    Reading every segment at each scrape would cost as much as the spool is large (and it grows
    while the store is down), so each file's line count is remembered with the size it was
    counted at, and only bytes appended since are read.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._seen: dict[str, tuple[int, int]] = {}  # name -> (bytes counted, lines in them)
        self._lock = threading.Lock()

    def total(self) -> int:
        with self._lock:
            present: dict[str, tuple[int, int]] = {}
            for path in self.directory.glob("records-*.jsonl"):
                if is_segment_name(path.name):
                    present[path.name] = self._count(path, self._seen.get(path.name, (0, 0)))
            self._seen = present
            return sum(lines for _, lines in present.values())

    def lines_of(self, path: Path) -> int:
        """Lines of one (closed) segment, counted now; used when it is uploaded."""
        with self._lock:
            return self._count(path, self._seen.get(path.name, (0, 0)))[1]

    @staticmethod
    def _count(path: Path, known: tuple[int, int]) -> tuple[int, int]:
        offset, lines = known
        try:
            with path.open("rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return known
        return offset + len(data), lines + data.count(b"\n")


class FsspecWriter:
    """Write records crash-safely to a local spool; a background thread uploads them to ``url``.

    Credentials and endpoints come from wherever the fsspec backend looks (for S3: the
    ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL_S3``
    and ``AWS_DEFAULT_REGION`` variables, profiles, instance roles) unless ``storage_options``
    names them. Uploads happen on the background thread every ``upload_interval_s`` (leftovers of
    a crashed run first), as soon as a segment rotates, on :meth:`flush` and on :meth:`close`.
    A failed background upload is logged, counted and retried with back-off; :meth:`flush` and
    :meth:`close` raise it, so a caller shutting down learns that records are still only in the
    spool. ``upload_interval_s=None`` turns the thread off (uploads then happen on rotation, in
    the writing thread, and on flush/close).

    Several processes may share one spool directory: a segment is uploaded only once its writer
    has closed it or died (see :func:`~assay.telemetry._jsonl.claim_segment`).
    """

    def __init__(
        self,
        url: str,
        spool_dir: str | Path | None = None,
        rotate_bytes: int = defaults.ROTATE_BYTES,
        fsync: bool = False,
        *,
        storage_options: Mapping[str, Any] | None = None,
        upload_interval_s: float | None = defaults.UPLOAD_INTERVAL_S,
        max_backoff_s: float = defaults.UPLOAD_MAX_BACKOFF_S,
    ) -> None:
        if upload_interval_s is not None and upload_interval_s <= 0:
            raise ValueError(f"upload_interval_s: must be positive, got {upload_interval_s}")
        self.url = url.rstrip("/")
        self._store = Store(resolve(self.url), storage_options)
        self.spool_dir = Path(spool_dir).expanduser() if spool_dir else default_spool_dir(url)
        self._upload_lock = threading.Lock()
        self._uploaded = 0
        self._errors = 0
        self._failing = False
        self._made = False
        self._interval = upload_interval_s
        self._max_backoff = max(max_backoff_s, upload_interval_s or 0.0)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._spool = JsonlWriter(
            self.spool_dir, rotate_bytes, fsync, on_rotate=self._segment_closed
        )
        self._counter = _SpoolCounter(self.spool_dir)
        self._thread: threading.Thread | None = None
        if upload_interval_s is None:
            # Leftovers of a run that crashed or was killed. Best effort: an unreachable store
            # must not stop recording; they stay in the spool and go with the next upload.
            self._try_upload("leftover segments")
        else:
            self._thread = threading.Thread(
                target=self._uploader, name=f"assay-upload {self.url}", daemon=True
            )
            self._thread.start()

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record to the spool (the upload follows when its segment closes)."""
        self._spool.write(record)

    def flush(self) -> None:
        """Close the current spool segment and upload every closed one now."""
        self._spool.rotate()
        self.upload_pending()

    def close(self) -> None:
        """Stop the uploader, close the spool and upload what is left. Safe to call twice."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._spool.close()
        self.upload_pending()

    def __enter__(self) -> FsspecWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> SpoolStats:
        """Records waiting in the spool, uploaded and failed uploads (read at metrics scrape)."""
        return SpoolStats(self._counter.total(), self._uploaded, self._errors)

    def upload_pending(self) -> list[str]:
        """Upload every closed segment in the spool; return the remote paths written.

        Stops at the first failure and raises it; segments not yet uploaded stay in the spool.
        """
        uploaded: list[str] = []
        with self._upload_lock:
            for path in sorted(self.spool_dir.glob("records-*.jsonl")):
                if not is_segment_name(path.name):
                    continue
                with claim_segment(path) as claimed:
                    if not claimed:
                        continue
                    lines = self._counter.lines_of(path)
                    try:
                        if not self._made:
                            self._store.makedirs()  # the bucket or folder, once reachable
                            self._made = True
                        dest = self._destination(path)
                        if dest is not None:
                            self._store.put_file(path, dest)
                            uploaded.append(dest)
                    except Exception:
                        self._errors += 1
                        raise
                    # The object exists now (or already did): only then may the spool forget it.
                    path.unlink()
                    self._uploaded += lines
        return uploaded

    def _destination(self, path: Path) -> str | None:
        """Where to upload a spool segment, or ``None`` if that exact file is already there.

        Names are unique per host (pid, time, per-process sequence with a random start), so an
        object of the same name is either this very segment, uploaded by a writer killed before
        it could remove its spool copy (same bytes: uploading again would duplicate every record
        in it), or, rarely, another host's segment (different bytes: overwriting it would lose
        that host's records, so this one takes a fresh name).
        """
        name = path.name
        dest = self._store.join(name)
        self._store.fs.invalidate_cache(dest)
        while self._store.fs.exists(dest):
            if self._same_content(path, dest):
                return None
            name = fresh_segment_name(name)
            dest = self._store.join(name)
        return dest

    def _same_content(self, local: Path, dest: str) -> bool:
        if self._store.size(dest) != local.stat().st_size:
            return False
        with self._store.fs.open(dest, "rb") as f:
            remote = hashlib.sha256(f.read()).digest()
        return remote == hashlib.sha256(local.read_bytes()).digest()

    def _segment_closed(self, path: Path) -> None:
        if self._thread is None:
            self._try_upload(path.name)
        else:
            self._wake.set()  # the uploader takes it; the writing thread never waits on the store

    def _try_upload(self, what: str) -> bool:
        try:
            self.upload_pending()
        except Exception:  # any fsspec backend error; the segments are safe in the spool
            if not self._failing:  # one warning per outage, not one per retry
                log.warning(
                    "upload of %s to %s failed; kept in %s and retried",
                    what,
                    self.url,
                    self.spool_dir,
                    exc_info=True,
                )
            self._failing = True
            return False
        if self._failing:
            log.warning("uploads to %s work again", self.url)
        self._failing = False
        return True

    def _uploader(self) -> None:
        assert self._interval is not None
        delay = 0.0  # leftovers of a killed run first
        while not self._stop.is_set():
            self._wake.wait(delay)
            self._wake.clear()
            if self._stop.is_set():
                return
            self._spool.rotate()
            if self._try_upload("spooled segments"):
                delay = self._interval
            else:
                delay = min(max(self._interval, delay * 2), self._max_backoff)
