"""Telemetry beside every layer: execution records, their compaction, and Prometheus metrics.

Records (principle 6) are appended as crash-safe JSONL to a local directory or any fsspec URL,
compacted to date-partitioned Parquet, and queried from both. Metrics follow Prometheus naming
and carry no per-job labels. The ``assay records`` commands live in :mod:`assay.telemetry.cli`
(not imported here, so library users do not pay for the CLI).
"""

from ._capacity import NodeCapacity, SessionStats, node_name
from ._remote import SpoolStats
from ._store import check as check_target
from .compact import compact, query
from .metrics import METRICS, Metrics, MetricSpec, metric_names, metrics_markdown
from .records import (
    RECORD_VERSION,
    SCHEMA,
    FsspecWriter,
    JsonlWriter,
    MemoryWriter,
    NullWriter,
    Record,
    RecordLimits,
    RecordTest,
    RecordWriter,
    iter_records,
    open_writer,
    to_table,
)

__all__ = [
    "METRICS",
    "RECORD_VERSION",
    "SCHEMA",
    "FsspecWriter",
    "JsonlWriter",
    "MemoryWriter",
    "MetricSpec",
    "Metrics",
    "NodeCapacity",
    "NullWriter",
    "Record",
    "RecordLimits",
    "RecordTest",
    "RecordWriter",
    "SessionStats",
    "SpoolStats",
    "check_target",
    "compact",
    "iter_records",
    "metric_names",
    "metrics_markdown",
    "node_name",
    "open_writer",
    "query",
    "to_table",
]
