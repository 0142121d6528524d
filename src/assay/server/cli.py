"""``assay serve``: the HTTP service under uvicorn.

Register in ``assay.cli`` with ``app.add_typer(serve_app, name="serve")`` (or
``app.command("serve")(serve_command)``).

One uvicorn process, one executor: the event loop only parses requests and waits for
results, while the executor's slots run programs in parallel, each in its own sandboxed
processes. Several server processes would split the queue (no global fairness or admission
control), the result cache and the warm sandbox pool, and oversubscribe the CPUs.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
from typing import Annotated

import typer

from ..errors import ConfigError, ValidationError
from ..types import ISOLATIONS
from .settings import Settings


def _return_large_buffers() -> None:
    """Have glibc give megabyte buffers (a run's output, its JSON answer) back to the system
    when they are freed. By default it raises its mmap threshold after each large free, and
    later outputs then come from the heap and stay resident once freed: the service's RSS
    would follow its largest bursts, not its live data."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)
        # Each thread that frees a big output otherwise keeps it cached in an arena of its
        # own: a few shared arenas keep what stays resident near the live data.
        libc.mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


#: mallopt's parameter numbers (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


def check_bind(host: str, settings: Settings, insecure_no_auth: bool = False) -> None:
    """Refuse (:class:`ConfigError`) to serve on an address other hosts can reach without
    API tokens: anyone there could run code on this host and read every caller's work.
    ``insecure_no_auth`` overrides (an authenticating proxy in front, a private network)."""
    if insecure_no_auth or settings.tenants().enabled or _loopback(host):
        return
    raise ConfigError(
        f"refusing to serve on {host!r} without API tokens: set ASSAY_API_TOKENS or "
        "ASSAY_API_TOKENS_FILE (name:token), or pass --insecure-no-auth"
    )


def _loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (a name other than
    ``localhost`` may resolve anywhere: it is not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    host: str = "127.0.0.1",
    port: int = 8080,
    slots: int | str = "auto",
    insecure: bool = False,
    *,
    settings: Settings | None = None,
    insecure_no_auth: bool = False,
    log_level: str = "info",
    records: str | None = None,
    log_format: str = "json",
    isolation: str | None = None,
    ray_address: str | None = None,
    access_log: bool = False,
) -> None:
    """Serve until SIGINT/SIGTERM; then stop accepting, let in-flight work finish (or fail it
    explicitly after the grace period), and close the sandboxes. ``slots`` is how many
    programs run at once (sandbox slots of the one executor), ``"auto"`` two per CPU; with
    ``ray_address`` batches run on that Ray cluster's nodes instead (``slots`` then unused).
    A non-loopback ``host`` needs API tokens (see :func:`check_bind`)."""
    import uvicorn

    from ..executor import LocalExecutor
    from ..runner import Runner
    from ..sandbox import SandboxConfig
    from ._protocol import GuardedHttpToolsProtocol
    from .app import create_app

    settings = settings or Settings.from_env()
    check_bind(host, settings, insecure_no_auth)
    n_slots = slot_count(slots)
    from ..telemetry.logs import configure_logging
    from ..telemetry.tracing import configure_from_env

    configure_logging(log_level, "text" if log_format == "text" else "json")
    _return_large_buffers()
    configure_from_env()  # OpenTelemetry spans only when an OTLP endpoint is configured
    runner = None
    if ray_address is None:
        sandbox_config = SandboxConfig(insecure=insecure)
        if isolation is not None:  # every run's tier unless a request names another
            sandbox_config = SandboxConfig(insecure=insecure, isolation=isolation)
        runner = Runner(config=sandbox_config)
        executor: LocalExecutor = LocalExecutor(runner, slots=n_slots, records=records)
    else:  # the sandboxes are the nodes': none here (the driver may run unprivileged)
        from ..executor.ray import RayExecutor

        executor = RayExecutor(ray_address, records=records)
    try:
        app = create_app(executor, settings=settings)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            workers=1,
            log_level=log_level,
            log_config=None,  # uvicorn's records go through the handler configured above
            timeout_graceful_shutdown=int(settings.shutdown_grace_s) + 5,
            server_header=False,
            # A log line per request costs the event loop ~0.1-0.4 ms a step (JSON-formatted):
            # off unless asked; the records, metrics and job logs cover what ran.
            access_log=access_log,
            http=GuardedHttpToolsProtocol,  # deadlines and a cap on request heads
        )
        uvicorn.Server(config).run()
    finally:
        executor.close()
        if runner is not None:
            runner.close()


def slot_count(slots: int | str) -> int:
    """Sandbox slots for ``slots`` (a positive integer, or ``"auto"``)."""
    if slots == "auto":
        # Two per CPU: each run hands off between the event loop, its supervisor thread
        # (one interpreter lock for all) and three sandbox processes, so a slot leaves its
        # core idle for part of every run. At concurrency 8 on 2 CPUs, 4 slots served ~9 %
        # more requests than 3 (benchmarks/server_load.py). Verdicts are CPU-time based, so
        # programs sharing a core cannot change them.
        return AUTO_SLOTS_PER_CPU * len(os.sched_getaffinity(0))
    try:
        n = int(slots)
    except ValueError:
        n = 0
    if n < 1:
        raise ValidationError("slots", "must be 'auto' or a positive integer")
    return n


#: ``--slots auto``: sandbox slots per CPU the server may use.
AUTO_SLOTS_PER_CPU = 2

serve_app = typer.Typer(add_completion=False, rich_markup_mode="rich")


@serve_app.callback(invoke_without_command=True)
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
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Run even if mandatory isolation is missing.")
    ] = False,
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
        n_slots = slot_count(slots)
    except ValidationError as exc:
        flag = "--workers" if workers is not None else "--slots"
        raise typer.BadParameter(exc.message, param_hint=flag) from None
    if log_format not in ("json", "text"):
        raise typer.BadParameter("'json' or 'text'", param_hint="--log-format")
    if log_level.lower() not in ("debug", "info", "warning", "error", "critical"):
        raise typer.BadParameter("debug, info, warning or error", param_hint="--log-level")
    if isolation is not None and isolation not in ISOLATIONS:
        raise typer.BadParameter(" or ".join(map(repr, ISOLATIONS)), param_hint="--isolation")
    from ..telemetry import check_target as check_records

    # At start, not at the first upload: an unknown scheme or missing S3 credentials is one
    # line and exit 2 (assay.cli.main), not a traceback from the background uploader.
    check_records(records, "--records")
    try:  # a bad token file or an open address without tokens: one line, exit 2
        settings = Settings.from_env()
        check_bind(host, settings, insecure_no_auth)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    serve(
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
