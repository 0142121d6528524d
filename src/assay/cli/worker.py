"""``assay worker``: one worker of the queue fleet (jobs from a broker, run in this machine's
sandboxes, results back). Stops on SIGINT/SIGTERM after the jobs in hand have their results
(a Kubernetes pod's grace period), so scaling in loses nothing either."""

from __future__ import annotations

import importlib
import logging
import os
import signal
from typing import Annotated, Any

import typer

from .. import defaults
from ..errors import AssayError
from ._common import EXIT_SANDBOX, EXIT_USAGE, Insecure, app, err_console, make_runner


def _backend(spec: str) -> Any:
    """The backend ``module:factory`` builds (called with no argument)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise typer.BadParameter("expected MODULE:FACTORY", param_hint="--backend")
    try:
        return getattr(importlib.import_module(module), name)()
    except (ImportError, AttributeError) as exc:
        raise typer.BadParameter(f"cannot load {spec}: {exc}", param_hint="--backend") from None


@app.command()
def worker(
    queue: Annotated[
        str,
        typer.Option(
            "--queue",
            envvar="ASSAY_QUEUE_URL",
            help="The broker: redis://[:TOKEN@]HOST:PORT/DB (rediss:// for TLS). Prefer the "
            "ASSAY_QUEUE_URL variable, which keeps the token off the command line.",
            show_default=False,
        ),
    ],
    prefix: Annotated[
        str, typer.Option(help="Key prefix of the fleet (the producer's).")
    ] = "assay",
    slots: Annotated[
        int | None, typer.Option(help="Programs run at once (default: this machine's CPUs).")
    ] = None,
    prefetch: Annotated[
        int, typer.Option(help="Jobs held beyond the slots.")
    ] = defaults.QUEUE_PREFETCH,
    visibility: Annotated[
        float,
        typer.Option(
            "--visibility", help="Seconds before a dead worker's jobs are claimed by another."
        ),
    ] = defaults.QUEUE_VISIBILITY_S,
    name: Annotated[
        str | None,
        typer.Option(help="Consumer name (default: host name and pid).", show_default=False),
    ] = None,
    metrics_port: Annotated[
        int, typer.Option(help="Serve Prometheus /metrics on this port (0: off).")
    ] = 0,
    records: Annotated[
        str | None, typer.Option(help="Where execution records go (path or fsspec URL).")
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            help="MODULE:FACTORY of another backend than the sandbox (tests, benchmarks).",
            show_default=False,
        ),
    ] = None,
    insecure: Insecure = False,
) -> None:
    """Run jobs of a queue fleet until stopped.

    \b
    Examples:
        ASSAY_QUEUE_URL=redis://:TOKEN@redis:6379/0 assay worker --metrics-port 9100
        assay worker --queue redis://127.0.0.1:6379/0 --slots 4
    """
    from ..executor import LocalExecutor
    from ..executor.queue import RedisBroker, Worker

    logging.basicConfig(level=os.environ.get("ASSAY_LOG_LEVEL", "INFO"))
    if slots is not None and slots < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--slots")
    if visibility <= 0:
        raise typer.BadParameter("must be positive", param_hint="--visibility")
    try:
        broker = RedisBroker(queue, prefix=prefix)
    except AssayError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    if backend is not None:
        executor = LocalExecutor(backend=_backend(backend), slots=slots, records=records)
    else:
        executor = LocalExecutor(make_runner(insecure), slots=slots, records=records)
    fleet_worker = Worker(broker, executor, name=name, prefetch=prefetch, visibility_s=visibility)
    if metrics_port:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, registry=executor.metrics.registry)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: fleet_worker.stop())
    try:
        fleet_worker.run()
    except AssayError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(EXIT_SANDBOX) from None
    finally:
        executor.close()
        broker.close()
