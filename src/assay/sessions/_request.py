"""The one sandbox run a session is: its agent, started with the session's limits."""

from __future__ import annotations

from .. import defaults
from ..sandbox import RunRequest
from ..types import Limits
from ._args import MAX_TTL_S
from .types import SessionLimits

#: How often a session's CPU budget is sampled (see ``RunRequest.cpu_poll_s``).
CPU_POLL_S = 0.5


def agent_request(
    lim: SessionLimits,
    ttl_s: float,
    files: list[tuple[str, bytes, int]],
    channel_fd: int,
    stop_fd: int,
    loopback: bool,
) -> RunRequest:
    """The run of a session's agent (``files[0]``, the agent's own file, is what runs):
    the session's limits for the whole run, its channel as fd 3, ``stop_fd`` to end it."""
    agent_name = files[0][0]
    return RunRequest(
        "python",
        [f"/work/{agent_name}", str(lim.processes), str(defaults.SESSION_PIDS_POLL_S)],
        files,
        limits=Limits(
            time_s=lim.cpu_s,
            wall_s=min(ttl_s + 5.0, MAX_TTL_S),  # the reaper ends it at the TTL
            memory_mb=lim.memory_mb,
            processes=lim.processes,
            output_bytes=64 << 10,  # the agent writes nothing; a step's output is capped
            file_bytes=lim.disk_mb << 20,
            disk_mb=lim.disk_mb,
        ),
        env=dict(defaults.SANDBOX_ENV),
        pass_fds=(channel_fd,),
        stop_fd=stop_fd,
        # The budget is checked twice a second (not every 50 ms): an idle session then
        # costs the trusted process almost nothing, and may overrun by about 0.5 s x cores.
        cpu_poll_s=CPU_POLL_S,
        cpu_weight=defaults.SESSION_CPU_WEIGHT,
        network="loopback" if loopback else "none",
    )
