"""The HTTP service under uvicorn (``assay serve``, whose options are parsed in
``assay.cli.serve``).

One uvicorn process, one executor: the event loop only parses requests and waits for
results, while the executor's slots run programs in parallel, each in its own sandboxed
processes. Several server processes would split the queue (no global fairness or admission
control), the result cache and the warm sandbox pool, and oversubscribe the CPUs.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os

from ..errors import ConfigError, ValidationError
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
