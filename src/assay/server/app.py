"""The HTTP service: ``create_app()`` builds the FastAPI app around one LocalExecutor.

One process owns one executor: the sandboxes are the parallelism (one worker thread per
slot, each running programs in separate, isolated processes), so the event loop only parses
requests and waits; more server processes would only split the queue and the caches.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import Overloaded, ValidationError
from ..executor import LocalExecutor
from . import dashboard, jupyter, native, reward, sandboxfusion, sessions, tenants
from ._service import Service
from .dashboard import Dashboard
from .models import ErrorResponse
from .settings import Settings

log = logging.getLogger("assay.server")
_OPEN = frozenset({"/healthz", "/readyz"})


class _Gate:
    """Pure ASGI middleware: bearer auth (the token names the request's tenant, which it
    puts in the scope for the routes) and the body size cap (413), both before FastAPI reads
    or parses anything."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.tenants = settings.tenants()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        found = self.tenants.authenticate(headers.get(b"authorization"))
        if found is None and scope["path"] not in _OPEN:
            if scope["type"] == "websocket":  # refused before the handshake is accepted
                await send({"type": "websocket.close", "code": 1008})
                return
            await _error(
                401,
                "authorization",
                "missing or wrong bearer token",
                send,
                {"www-authenticate": "Bearer"},
            )
            return
        scope[tenants.SCOPE_KEY] = found
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        cap = self.settings.max_body_bytes
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > cap:
            await _error(413, "body", f"more than {cap} bytes", send)
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:  # buffer (bounded) so an unannounced oversized body is refused too
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:
                await _error(413, "body", f"more than {cap} bytes", send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if (
            scope["path"] == "/run_code"
            and scope["method"] == "POST"
            and await sandboxfusion.run_code_fast(scope, headers, body, send)
        ):
            return
        if (
            scope["method"] == "POST"
            and scope["path"].endswith("/exec")
            and await sessions.exec_fast(scope, headers, body, send)
        ):
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _error(
    status: int, field: str, message: str, send: Send, extra: dict[str, str] | None = None
) -> None:
    response = JSONResponse(
        {"field": field, "message": f"{field}: {message}"}, status, headers=extra
    )
    await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [p for p in loc if p != "body"]
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "body"


def create_app(
    executor: LocalExecutor | None = None, *, settings: Settings | None = None
) -> FastAPI:
    """The service. Without ``executor`` the lifespan creates one and closes it on shutdown;
    a given executor is left open (its owner closes it)."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ex = executor if executor is not None else await asyncio.to_thread(LocalExecutor)
        ex.metrics.bind_records(ex.records)  # spool/upload counts when records go to S3
        if ex.runner is not None:
            ex.metrics.bind_compile_cache(ex.runner.compile_cache)
        svc = Service(ex, settings)
        app.state.service = svc
        with suppress(ValidationError):  # made now: /metrics has session series from the start
            sessions.manager(app, ex)  # (an executor without a sandbox hosts no sessions)
        app.state.dashboard = dash = Dashboard(ex)
        sampler = asyncio.create_task(dash.run())
        try:
            yield
        finally:
            sampler.cancel()
            await svc.drain()
            await asyncio.to_thread(sessions.shutdown, app)
            if executor is None:
                await asyncio.to_thread(ex.close)

    # FastAPI's own OpenTelemetry hooks (0.16x) cost a context lookup per request; Assay
    # exports its metrics to Prometheus itself.
    quiet = (
        {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
        if "telemetry" in inspect.signature(FastAPI.__init__).parameters
        else {}
    )
    app = FastAPI(
        **quiet,  # type: ignore[arg-type]
        title="Assay",
        version=__version__,
        summary="Secure code execution and judging for RL training (SandboxFusion-compatible).",
        lifespan=lifespan,
        docs_url=None,  # served below from local files: the default loads them from a CDN
        redoc_url=None,
        responses={
            422: {"model": ErrorResponse, "description": "invalid request"},
            429: {"model": ErrorResponse, "description": "queue full (Retry-After)"},
        },
    )
    app.add_middleware(_Gate, settings=settings)

    @app.exception_handler(ValidationError)
    async def _invalid(request: Request, exc: ValidationError) -> JSONResponse:
        return JSONResponse({"field": exc.field, "message": str(exc)}, 422)

    @app.exception_handler(RequestValidationError)
    async def _malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = _loc(errors[0]["loc"]) if errors else "body"
        text = "; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in errors[:5])
        return JSONResponse({"field": first, "message": text}, 422)

    @app.exception_handler(HTTPException)
    async def _unparsable(request: Request, exc: HTTPException) -> Response:
        # FastAPI answers a body its JSON parser cannot descend (a RecursionError, not the
        # JSONDecodeError it turns into a 422) with a bare 400: the client's input, worded
        # as every other bad field is.
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            message = "body: not valid JSON: nested too deeply"
            return JSONResponse({"field": "body", "message": message}, 422)
        return await http_exception_handler(request, exc)

    @app.exception_handler(Overloaded)
    async def _overloaded(request: Request, exc: Overloaded) -> JSONResponse:
        wait = max(1, math.ceil(exc.retry_after))
        return JSONResponse(
            {"field": "queue", "message": str(exc)}, 429, headers={"Retry-After": str(wait)}
        )

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"], responses={503: {"model": ErrorResponse}})
    async def readyz(request: Request) -> Response:
        """Ready to take work: the executor runs and the server is not shutting down."""
        svc: Service | None = getattr(request.app.state, "service", None)
        if svc is None or svc.closing:
            return JSONResponse({"field": "server", "message": "server: not ready"}, 503)
        ex = svc.executor
        body = {"status": "ready", "slots": ex.slots, "busy": ex.busy, "queued": ex.queue.depth()}
        return Response(json.dumps(body), media_type="application/json")

    @app.get("/metrics", tags=["ops"], response_class=Response)
    async def metrics(request: Request) -> Response:
        """Prometheus text exposition of the executor's metrics."""
        svc: Service = request.app.state.service
        return Response(svc.executor.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    _local_docs(app)
    app.include_router(sandboxfusion.router)
    app.include_router(native.router)
    app.include_router(reward.router)
    app.include_router(dashboard.router)
    app.include_router(sessions.router)
    app.include_router(jupyter.router)
    return app


def _local_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) from the files of the ``swagger-ui-bundle-v2`` package, so that
    the page works on a machine without internet access (FastAPI's default loads them from
    a CDN and is blank offline)."""
    import swagger_ui_bundle

    app.mount("/docs/static", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url="/docs/static/swagger-ui-bundle.js",
            swagger_css_url="/docs/static/swagger-ui.css",
            swagger_favicon_url="/docs/static/favicon-32x32.png",
            oauth2_redirect_url="/docs/oauth2-redirect",
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
