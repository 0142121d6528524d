"""The threads that take jobs from an executor's queue and judge them."""

from __future__ import annotations

import threading
from collections.abc import Callable

#: Their names (then ``-<i>``), in the local executor and in a Ray node's agent: what a
#: profiler, ``py-spy`` or ``benchmarks/eval_throughput.py``'s CPU by thread shows as judging.
WORKER_THREAD = "assay-worker"


def start_workers(work: Callable[[str], None], labels: list[str]) -> list[threading.Thread]:
    """One daemon thread per label running ``work(label)``, started."""
    threads = [
        threading.Thread(target=work, args=(label,), daemon=True, name=f"{WORKER_THREAD}-{i}")
        for i, label in enumerate(labels)
    ]
    for t in threads:
        t.start()
    return threads
