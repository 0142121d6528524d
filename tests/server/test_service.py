"""The service's store of async batches (GET /v1/batches/{id}) is bounded by bytes too."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from assay.server import Settings
from assay.server._service import Service
from assay.server.tenants import ANONYMOUS
from assay.types import ExecResult

MiB = 1 << 20


class _Handle:
    def __init__(self, bid: str) -> None:
        self.id = bid
        self.done = False
        self.callbacks: list[Any] = []

    def add_callback(self, cb: Any) -> None:
        self.callbacks.append(cb)

    def finish(self, out_bytes: int) -> None:
        result = SimpleNamespace(result=ExecResult("ok", stdout=b"x" * out_bytes), judgement=None)
        for cb in self.callbacks:
            cb(result)
        self.done = True


def test_finished_batches_past_the_byte_budget_are_dropped_oldest_first() -> None:
    svc = Service(executor=None, settings=Settings(max_batches_kept_bytes=40 * MiB))  # type: ignore[arg-type]
    for i in range(10):
        h = _Handle(f"b{i}")
        svc.keep(h, ANONYMOUS)  # type: ignore[arg-type]
        h.finish(15 * MiB)
    kept = list(svc.batches)
    assert kept[-1] == "b9" and len(kept) <= 3, kept
    assert sum(k.nbytes for k in svc.batches.values()) <= 40 * MiB + 15 * MiB


def test_running_batches_are_never_dropped() -> None:
    svc = Service(executor=None, settings=Settings(max_batches_kept_bytes=1))  # type: ignore[arg-type]
    running = _Handle("running")
    svc.keep(running, ANONYMOUS)  # type: ignore[arg-type]
    for i in range(3):
        h = _Handle(f"b{i}")
        svc.keep(h, ANONYMOUS)  # type: ignore[arg-type]
        h.finish(MiB)
    assert "running" in svc.batches
