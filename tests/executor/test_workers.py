from __future__ import annotations

import threading

from assay.executor._workers import WORKER_THREAD, start_workers


def test_each_label_gets_a_started_daemon_thread_named_as_a_worker() -> None:
    seen: dict[str, str] = {}
    go = threading.Event()

    def work(label: str) -> None:
        go.wait(5)
        seen[label] = threading.current_thread().name

    threads = start_workers(work, ["host/w0", "host/w1"])
    assert all(t.daemon and t.is_alive() for t in threads)
    go.set()
    for t in threads:
        t.join(5)
    assert seen == {"host/w0": f"{WORKER_THREAD}-0", "host/w1": f"{WORKER_THREAD}-1"}
