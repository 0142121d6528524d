"""Service settings: every cap the HTTP layer enforces before work reaches the executor.

The caps exist so one bad or hostile request is refused at the door with a clear 4xx instead
of tying up sandboxes or memory; the defaults suit a trainer sending RL rollouts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from .. import defaults
from . import tenants

#: The caps an ``ASSAY_SERVER_<FIELD NAME>`` variable (a whole number) may override.
_ENV_PREFIX = "ASSAY_SERVER_"
_ENV_INTS = (
    "max_body_bytes",
    "max_code_bytes",
    "max_files",
    "max_memory_mb",
    "max_batch",
    "max_session_disk_mb",
    "max_download_bytes",
    "max_sessions",
)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


@dataclass(frozen=True, slots=True)
class Settings:
    #: Bytes of request body accepted (413 above it), checked before the body is parsed.
    max_body_bytes: int = 32 * 1024 * 1024
    #: Bytes of source code per program.
    max_code_bytes: int = 1024 * 1024
    #: Files per request (``files`` of /run_code, /v1/run) and paths in ``fetch_files``.
    max_files: int = 64
    #: Decoded bytes of one input file.
    max_file_bytes: int = 16 * 1024 * 1024
    #: Bytes of stdin per program (or per test input).
    max_stdin_bytes: int = 16 * 1024 * 1024
    #: Bytes of stdout (and of stderr) kept per run; more is cut off by the sandbox, so a
    #: flood of output costs a bounded response, never a hang.
    max_output_bytes: int = 8 * 1024 * 1024
    #: Upper bounds of the limits a request may ask for.
    max_time_s: float = 60.0
    max_memory_mb: int = 8192
    #: Memory when a SandboxFusion request says ``memory_limit_MB: -1`` (their "default").
    default_memory_mb: int = 1024
    #: Programs per /v1/judge, /get_reward or batch request, and tests per problem.
    max_batch: int = 4096
    max_tests: int = 2048
    #: Finished batches kept for GET /v1/batches/{id}, oldest dropped first.
    max_batches_kept: int = 1024
    #: ... and at most this many bytes of their results (outputs, messages), oldest
    #: finished batches dropped first, so a stream of large outputs cannot grow the service.
    max_batches_kept_bytes: int = 256 << 20
    #: Upper bounds of a session's limits beyond ``max_memory_mb`` (its memory and each
    #: step's) and ``max_output_bytes`` (per stream per step): its /work and /tmp, its
    #: total CPU, its processes (the run API's bound).
    max_session_disk_mb: int = defaults.SESSION_MAX_DISK_MB
    max_session_cpu_s: float = defaults.SESSION_MAX_CPU_S
    max_processes: int = 1024
    #: Largest session download (a file, or a tar's files): 413 naming the path beyond it.
    max_download_bytes: int = defaults.SESSION_DOWNLOAD_MAX_BYTES
    #: Open sessions at most (429 beyond), and the MiB their memory limits may add up to
    #: (None: ``defaults.SESSION_MEMORY_SHARE`` of what the host has).
    max_sessions: int = defaults.SERVER_MAX_SESSIONS
    session_memory_mb: int | None = None
    #: Bearer token required on every endpoint except /healthz and /readyz (None: no auth):
    #: the one token of the tenant ``default`` (see :mod:`assay.server.tenants`).
    api_token: str | None = field(default=None, repr=False)
    #: ``(tenant name, token)`` pairs: each token authenticates its tenant (never in a repr).
    api_tokens: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: Tenants that see every tenant's batches, sessions and dashboard rows.
    admin_tenants: frozenset[str] = frozenset()
    #: Seconds graceful shutdown waits for in-flight batches before cancelling them.
    shutdown_grace_s: float = 30.0

    def tenants(self) -> tenants.Tenants:
        """Who each token authenticates (:class:`ConfigError` if that is inconsistent)."""
        single = ((tenants.DEFAULT_TENANT, self.api_token),) if self.api_token else ()
        return tenants.Tenants((*single, *self.api_tokens), self.admin_tenants)

    @classmethod
    def from_env(cls) -> Settings:
        """Defaults overridden by the token variables (``ASSAY_API_TOKEN``, ``ASSAY_API_TOKENS``,
        ``ASSAY_API_TOKENS_FILE``, ``ASSAY_ADMIN_TENANTS``) and ``ASSAY_SERVER_*`` variables;
        a malformed token entry is a :class:`~assay.errors.ConfigError` naming it."""
        base = cls()
        pairs, admins = tenants.load(os.environ)
        return replace(
            base,
            **{
                name: _env_int(_ENV_PREFIX + name.upper(), getattr(base, name))
                for name in _ENV_INTS
            },
            session_memory_mb=_env_int(_ENV_PREFIX + "SESSION_MEMORY_MB", 0) or None,
            api_token=os.environ.get("ASSAY_API_TOKEN") or None,
            api_tokens=pairs,
            admin_tenants=admins,
        )
