"""``/dashboard``: a live view of the service, served by the service itself.

No request leaves the machine: the page, its script and plotly.js (from the ``plotly`` Python
package, the ``dashboard`` extra) are all served from here. Charts come from a short history
the service samples from its own metrics (:class:`~assay.telemetry.history.MetricsHistory`);
the per-caller and per-batch tables from the newest execution records
(:class:`~assay.telemetry.recent.RecentRecords`).

A tenant's tables hold only its own work (its caller's rows: with tokens a record's caller is
its tenant), and another tenant's batch id answers 404 as an unknown one does; an admin
tenant sees every row. The charts are the service's own totals (load, throughput, the verdict
mix), no tenant's work: every tenant sees them, as ``/metrics``.
"""

from __future__ import annotations

import asyncio
import logging
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from ..executor import LocalExecutor
from ..telemetry import NullWriter
from ..telemetry.history import MetricsHistory
from ..telemetry.recent import RecentRecords, TeeWriter
from ._service import Who

__all__ = ["SAMPLE_INTERVAL_S", "Dashboard", "plotly_js", "router"]

log = logging.getLogger("assay.server")

#: Seconds between two samples of the metrics history (the charts' resolution).
SAMPLE_INTERVAL_S = 2.0
_STATIC = resources.files("assay.server") / "dashboard_static"
_MISSING = (
    "dashboard: plotly is not installed; install the extra with "
    "pip install 'assay[dashboard]' (plotly.js is served from it, never from a CDN)"
)

router = APIRouter(prefix="/dashboard", tags=["dashboard"], include_in_schema=False)


def plotly_js() -> Path | None:
    """The plotly.js bundled in the ``plotly`` package, or ``None`` if it is not installed."""
    try:
        root = resources.files("plotly") / "package_data" / "plotly.min.js"
    except ModuleNotFoundError:
        return None
    path = Path(str(root))
    return path if path.is_file() else None


class Dashboard:
    """The dashboard's state for one executor: a metrics history and the newest records.

    Attaching wraps the executor's record writer in a :class:`TeeWriter` (once; a second
    dashboard on the same executor shares the first one's rows). With records ``off`` there is
    nothing to drill into, and the tables say so.
    """

    def __init__(self, executor: LocalExecutor, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.history = MetricsHistory(executor.metrics.registry)
        self.interval_s = interval_s
        records = executor.records
        self.recent: RecentRecords | None
        if isinstance(records, TeeWriter):
            self.recent = records.recent
        elif isinstance(records, NullWriter):
            self.recent = None
        else:
            self.recent = RecentRecords()
            executor.records = TeeWriter(records, self.recent)

    async def run(self) -> None:
        """Sample the metrics every ``interval_s`` until cancelled."""
        while True:
            try:
                self.history.sample()
            except Exception:  # a failed sample leaves a gap in the charts, nothing more
                log.warning("dashboard: metrics sample failed", exc_info=True)
            await asyncio.sleep(self.interval_s)


def _dashboard(request: Request) -> Dashboard:
    dash: Dashboard = request.app.state.dashboard
    return dash


def _static(name: str, media_type: str) -> Response:
    return Response((_STATIC / name).read_bytes(), media_type=media_type)


@router.get("")
async def page() -> Response:
    """The page (503 with the install hint when plotly is missing)."""
    if plotly_js() is None:
        return JSONResponse({"field": "dashboard", "message": _MISSING}, 503)
    return _static("index.html", "text/html; charset=utf-8")


@router.get("/plotly.min.js")
async def plotly() -> Response:
    path = plotly_js()
    if path is None:
        return JSONResponse({"field": "dashboard", "message": _MISSING}, 503)
    return FileResponse(
        path, media_type="text/javascript", headers={"cache-control": "max-age=86400"}
    )


@router.get("/app.js")
async def script() -> Response:
    return _static("app.js", "text/javascript")


@router.get("/style.css")
async def style() -> Response:
    return _static("style.css", "text/css")


@router.get("/api/series")
async def series(request: Request) -> dict[str, Any]:
    """Rates, percentiles and gauges over the sampled history."""
    dash = _dashboard(request)
    out = dash.history.series()
    out["interval_s"] = dash.interval_s
    return out


@router.get("/api/callers")
async def callers(request: Request, who: Who) -> dict[str, Any]:
    """One summary per caller the tenant may see (its own; every one for an admin)."""
    recent = _dashboard(request).recent
    if recent is None:
        return {"records": False, "callers": []}
    return {"records": True, "callers": [c for c in recent.callers() if who.owns(c["caller"])]}


@router.get("/api/batches")
async def batches(
    request: Request, who: Who, caller: str | None = None, limit: int = 50
) -> dict[str, Any]:
    """The newest batches (of ``caller`` if given) that the tenant may see."""
    recent = _dashboard(request).recent
    if recent is None:
        return {"records": False, "batches": []}
    if not who.admin:
        if caller not in (None, who.name):
            return {"records": True, "batches": []}
        caller = who.name
    return {"records": True, "batches": recent.batches(caller, max(1, min(limit, 500)))}


@router.get("/api/batches/{batch_id}")
async def batch(request: Request, batch_id: str, who: Who) -> dict[str, Any]:
    """The kept jobs of one batch; 404 if none is kept that the tenant may see."""
    recent = _dashboard(request).recent
    jobs = recent.batch(batch_id) if recent is not None else []
    mine = [j for j in jobs if who.owns(j["caller"])]
    if not mine:
        raise HTTPException(404, f"batch_id: no batch {batch_id!r}")
    return {"batch_id": batch_id, "jobs": mine}
