"""Every tunable constant of :mod:`assay.telemetry`, each with the reason for its value.

They live beside the telemetry code (not in :mod:`assay.defaults`) so this package stays
self-contained; the values follow the same rule: one place, one reason each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: Where records go when the caller names no target: a per-user data directory, because
#: records outlive any one run and must not land in the current working directory.
RECORDS_DIR = Path("~/.local/share/assay/records")
#: Environment variable that overrides :data:`RECORDS_DIR` (a path, a URL, or ``off``), so a
#: deployment can redirect records without code changes.
RECORDS_ENV = "ASSAY_RECORDS"
#: The target string that turns recording off (records are dropped, nothing is created).
OFF = "off"

#: A JSONL segment is closed and a new one started once it passes this size. 64 MiB keeps
#: segments few enough to list cheaply and small enough to upload and compact in one piece.
ROTATE_BYTES = 64 * 1024 * 1024

#: Local spool directories for remote (fsspec) targets, one per URL (named by a hash of it).
#: Records are first appended here so a crash never loses more than one record, then the closed
#: segment is uploaded whole.
SPOOL_DIR = Path("~/.cache/assay/spool")

#: A remote writer's background uploader closes the open spool segment and uploads every closed
#: one this often, so records reach the object store within seconds even when traffic is too
#: light to fill a segment, at the cost of many small objects (compaction merges them).
UPLOAD_INTERVAL_S = 10.0
#: After a failed upload the uploader waits twice as long each time, up to this, so an endpoint
#: that is down is not hammered while records pile up safely in the spool.
UPLOAD_MAX_BACKOFF_S = 60.0

#: An empty segment nobody holds a lock on is removed once it is this old. A writer creates its
#: file and locks it a moment later; the grace period keeps that moment from looking abandoned.
EMPTY_SEGMENT_GRACE_S = 60.0

#: Compaction reads at most about this many bytes of JSONL before writing Parquet, so memory
#: stays bounded however many segments have piled up.
COMPACT_BATCH_BYTES = 256 * 1024 * 1024

#: Parquet compression: zstd shrinks source code and program output far better than snappy at a
#: similar decoding speed.
PARQUET_COMPRESSION: Final = "zstd"
