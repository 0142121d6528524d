"""The keyword arguments every executor takes: its queue, result cache, retries and records.

:class:`~assay.executor.LocalExecutor` and :class:`~assay.executor.ray.RayExecutor` both take
them as ``**options`` (the cluster executor runs the local executor's scheduler on its
driver and hands them on unchanged), so they are declared here once, with their defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from .. import defaults
from ..scheduler import RuntimeEstimator
from ..scheduler.queue import Order
from ..telemetry import Metrics, RecordWriter


class ExecutorOptions(TypedDict, total=False):
    """Each is optional; :data:`DEFAULTS` holds what one left out is."""

    #: Jobs that may wait in the queue before ``submit`` answers ``Overloaded``.
    max_queued: int
    #: Answer identical jobs from one run (in flight and finished).
    cache: bool
    #: Finished results kept for identical jobs (LRU).
    cache_entries: int
    #: Extra attempts after a ``sandbox_error`` (never after the program's own failures).
    retries: int
    #: Spread a long submission's tests over the slots a small batch leaves idle.
    split: bool
    #: Which queued task runs next within a priority class and caller.
    order: Order
    #: Where execution records go: a path or URL, a writer, or None for the default.
    records: str | Path | RecordWriter | None
    #: Where runtime estimates persist (default: :func:`assay.defaults.state_dir`).
    state_dir: str | Path | None
    estimator: RuntimeEstimator | None
    metrics: Metrics | None


DEFAULTS: ExecutorOptions = {
    "max_queued": defaults.EXECUTOR_MAX_QUEUED,
    "cache": True,
    "cache_entries": defaults.EXECUTOR_CACHE_ENTRIES,
    "retries": defaults.EXECUTOR_RETRIES,
    "split": True,
    "order": "lpt",
    "records": None,
    "state_dir": None,
    "estimator": None,
    "metrics": None,
}


def with_defaults(owner: str, given: ExecutorOptions) -> ExecutorOptions:
    """``given`` completed from :data:`DEFAULTS`; a name that is not an option raises the
    ``TypeError`` Python raises for an unexpected keyword argument of ``owner()`` (at run
    time ``**options`` takes any name; the type checker knows only these)."""
    unknown = sorted(given.keys() - DEFAULTS.keys())
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    return {**DEFAULTS, **given}
