"""Records to any fsspec URL (S3, GCS, memory, file) without giving up crash safety.

Object stores cannot append, and a record held only in memory dies with the process. So every
record is first appended to a local spool segment (the same crash-safe JSONL as local targets);
whole, closed segments are then uploaded under the same name and the spool copy removed. A
crashed run leaves its segments in the spool, and the next writer for the same URL uploads them.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import defaults
from ._jsonl import JsonlWriter, claim_segment, fresh_segment_name, is_segment_name
from ._store import Store, resolve

__all__ = ["FsspecWriter", "default_spool_dir"]

log = logging.getLogger(__name__)


def default_spool_dir(url: str) -> Path:
    """``~/.cache/assay/spool/<hash of url>``: one spool per destination, stable across runs."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return defaults.SPOOL_DIR.expanduser() / digest


class FsspecWriter:
    """Write records crash-safely to a local spool and upload closed segments to ``url``.

    Uploads happen at construction (leftovers of a crashed run), when a spool segment rotates
    (in the writing thread, outside the write lock, so other threads keep writing), on
    :meth:`flush` and on :meth:`close`. A failed upload at construction or rotation is logged
    and retried at the next one; :meth:`flush` and :meth:`close` raise it, so a caller shutting
    down learns that records are still only in the spool.

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
    ) -> None:
        self.url = url.rstrip("/")
        self._store = Store(resolve(self.url), storage_options)
        self._store.makedirs()
        self.spool_dir = Path(spool_dir).expanduser() if spool_dir else default_spool_dir(url)
        self._upload_lock = threading.Lock()
        self._spool = JsonlWriter(
            self.spool_dir, rotate_bytes, fsync, on_rotate=self._segment_closed
        )
        # Leftovers of a run that crashed or was killed. Best effort: an unreachable store must
        # not stop recording; they stay in the spool and go with the next upload.
        self._try_upload("leftover segments")

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record to the spool (the upload follows when its segment closes)."""
        self._spool.write(record)

    def flush(self) -> None:
        """Close the current spool segment and upload every closed one now."""
        self._spool.rotate()
        self.upload_pending()

    def close(self) -> None:
        """Close the spool and upload what is left. Safe to call twice."""
        self._spool.close()
        self.upload_pending()

    def __enter__(self) -> FsspecWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
                    dest = self._free_name(path.name)
                    self._store.put_file(path, dest)
                    path.unlink()
                    uploaded.append(dest)
        return uploaded

    def _free_name(self, name: str) -> str:
        """The remote path for a segment: its own name unless another host already used it.

        Names are unique per host (pid, time, per-process sequence with a random start), so a
        clash is rare, but overwriting would silently lose another host's records.
        """
        dest = self._store.join(name)
        while self._store.fs.exists(dest):
            name = fresh_segment_name(name)
            dest = self._store.join(name)
        return dest

    def _segment_closed(self, path: Path) -> None:
        self._try_upload(path.name)

    def _try_upload(self, what: str) -> None:
        try:
            self.upload_pending()
        except Exception:  # any fsspec backend error; the segments are safe in the spool
            log.warning(
                "upload of %s to %s failed; kept in %s for the next attempt",
                what,
                self.url,
                self.spool_dir,
                exc_info=True,
            )
