"""The session agent as the sandbox receives it: agent.py with workspace.py and procs.py in
front (one file), as bytecode when the sandbox's interpreter reads ours."""

from __future__ import annotations

import marshal
from functools import cache
from importlib import resources
from importlib.util import MAGIC_NUMBER

from ..runner import Runner
from ._args import AGENT, AGENT_PYC


@cache
def inside_file(name: str) -> bytes:
    return resources.files("assay.sessions._inside").joinpath(name).read_bytes()


@cache
def _agent_source() -> bytes:
    """agent.py with workspace.py and procs.py in front of it, in place of its imports of
    them: the agent is one file to write and load per session."""
    skip = (b"from .workspace import", b"from .procs import", b"from __future__ import")

    def body(name: str) -> bytes:
        lines = inside_file(name).split(b"\n")
        return b"\n".join(line for line in lines if not line.startswith(skip))

    return inside_file("workspace.py") + b"\n" + body("procs.py") + b"\n" + body("agent.py")


@cache
def _agent_pyc() -> bytes:
    code = compile(_agent_source(), f"/work/{AGENT}", "exec", dont_inherit=True)
    # The .pyc layout: magic, flags (0: timestamp-based, unchecked when run directly), 8 bytes.
    return MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


def agent_file(runner: Runner | None) -> tuple[str, bytes]:
    """The agent as bytecode when the sandbox's interpreter reads ours (no compile per
    session create: ~3-4 ms of CPU), else as source."""
    if runner is not None and runner.bytecode_magic == MAGIC_NUMBER.hex():
        return AGENT_PYC, _agent_pyc()
    return AGENT, _agent_source()
