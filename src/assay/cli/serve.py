"""``assay serve``: parse and check the options, then serve (``assay.server.serving``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import ConfigError, ValidationError
from ..server import serving
from ..server.settings import Settings
from ..telemetry import check_target as check_records
from ..types import ISOLATIONS
from ._common import Insecure


def serve_command(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8080,
    slots: Annotated[
        str,
        typer.Option(
            "--slots", help="Programs run at once (sandbox slots): 'auto' = 2 per CPU, or a number."
        ),
    ] = "auto",
    workers: Annotated[
        str | None,
        typer.Option(
            "--workers",
            help="Deprecated alias of --slots (it never set server worker processes: the "
            "server is one process).",
        ),
    ] = None,
    insecure: Insecure = False,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            help="Serve a non-loopback --host without API tokens (only behind an "
            "authenticating proxy or on a trusted network: anyone reaching it runs code here).",
        ),
    ] = False,
    records: Annotated[
        str | None,
        typer.Option(
            help="Where execution records go: a directory, an fsspec URL such as "
            "s3://bucket/prefix (spooled locally, uploaded in the background; credentials from "
            "AWS_* variables), or 'off'. Default: $ASSAY_RECORDS, else "
            "~/.local/share/assay/records.",
            show_default=False,
        ),
    ] = None,
    log_level: Annotated[
        str, typer.Option(help="debug, info, warning or error (debug adds a line per job).")
    ] = "info",
    log_format: Annotated[
        str, typer.Option(help="'json' (one object per line, with job and batch ids) or 'text'.")
    ] = "json",
    isolation: Annotated[
        str | None,
        typer.Option(
            help="'default' or 'gvisor': the tier of every run (a request's 'isolation' field "
            "may still choose); default: $ASSAY_ISOLATION, else 'default'.",
            show_default=False,
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Run batches on a Ray cluster ('auto', or ray://HEAD:10001), one node agent "
            "per node; --slots is then unused (a node runs as many programs as it has CPUs). "
            "Sessions (/v1/sessions, /run_jupyter) are held by the node agents, each pinned to "
            "its node (reason node_lost if that node dies). Needs pip install 'assay\\[ray]'.",
            show_default=False,
        ),
    ] = None,
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log",
            help="Log a line per HTTP request (off by default: on a step's hot path it costs "
            "the event loop more than the rest of the request's handling).",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API: SandboxFusion-compatible /run_code and /submit, native /v1
    (run, judge, batches with server-sent events), OpenRLHF /get_reward, /metrics.

    Tenants: ASSAY_API_TOKENS="name:token,..." or ASSAY_API_TOKENS_FILE (one name:token a
    line) require a bearer token on all routes but /healthz, /readyz; each tenant sees only
    its own batches and sessions (ASSAY_ADMIN_TENANTS="name,..." see all). ASSAY_API_TOKEN
    is one shared token (tenant 'default'). Without tokens only loopback --host is served.

    Example:

        ASSAY_API_TOKENS_FILE=/etc/assay/tokens assay serve --host 0.0.0.0 --slots 16

        assay serve --records s3://my-bucket/assay   # then open http://127.0.0.1:8080/dashboard

        assay serve --isolation gvisor   # every run on gVisor's kernel (the hardened tier)

        ASSAY_API_TOKENS_FILE=/etc/assay/tokens assay serve --host 0.0.0.0 --ray auto

        curl -s localhost:8080/run_code -H 'content-type: application/json' \\
            -H "authorization: Bearer $TOKEN" -d '{"code": "print(1+1)", "language": "python"}'
    """
    if workers is not None:
        typer.echo(
            "warning: --workers is deprecated and will be removed: it sets sandbox slots; "
            "use --slots",
            err=True,
        )
        slots = workers
    try:
        n_slots = serving.slot_count(slots)
    except ValidationError as exc:
        flag = "--workers" if workers is not None else "--slots"
        raise typer.BadParameter(exc.message, param_hint=flag) from None
    if log_format not in ("json", "text"):
        raise typer.BadParameter("'json' or 'text'", param_hint="--log-format")
    if log_level.lower() not in ("debug", "info", "warning", "error", "critical"):
        raise typer.BadParameter("debug, info, warning or error", param_hint="--log-level")
    if isolation is not None and isolation not in ISOLATIONS:
        raise typer.BadParameter(" or ".join(map(repr, ISOLATIONS)), param_hint="--isolation")
    # At start, not at the first upload: an unknown scheme or missing S3 credentials is one
    # line and exit 2 (assay.cli.main), not a traceback from the background uploader.
    check_records(records, "--records")
    try:  # a bad token file or an open address without tokens: one line, exit 2
        settings = Settings.from_env()
        serving.check_bind(host, settings, insecure_no_auth)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    serving.serve(
        host,
        port,
        n_slots,
        insecure,
        records=records,
        log_level=log_level.lower(),
        log_format=log_format,
        isolation=isolation,
        ray_address=ray,
        access_log=access_log,
        settings=settings,
        insecure_no_auth=insecure_no_auth,
    )
