"""The judge's trusted in-sandbox scripts (the call server, the test harness), each shipped
as one file with the value codec they use in front of it (``codec.py``, whose names they
import as ``_assay_codec``: one file to write and load per run instead of two).

Compiling them is a fixed cost of every judged run (about 1.5 ms for the call server and
3.3 ms for the harness on this machine's Python), so when the sandbox's interpreter reads the
same bytecode as this one (equal magic numbers, reported by the fork server) they are sent
compiled, as ``.pyc`` files, and the in-sandbox runner loads them with ``marshal`` instead.
"""

from __future__ import annotations

import functools
import marshal
from importlib import resources
from importlib.util import MAGIC_NUMBER

from ..runner import Runner, RunRequest
from ..sandbox import Companion
from ..types import Limits, Network

_PKG = resources.files("assay.judge._inside")
CALLSERVER = "callserver.py"
HARNESS = "harness.py"
CODEC = "codec.py"
_CODEC_IMPORT = b"from _assay_codec import "

File = tuple[str, bytes, int]


@functools.cache
def source(name: str) -> bytes:
    return _PKG.joinpath(name).read_bytes()


def with_codec(script: bytes) -> bytes:
    """``script`` with the codec's source in front of it, in place of its import of
    ``_assay_codec`` (such scripts define none of the codec's names themselves). Test
    generation's oracle ships this way too."""
    body = [line for line in script.split(b"\n") if not line.startswith(_CODEC_IMPORT)]
    return source(CODEC) + b"\n" + b"\n".join(body)


@functools.cache
def bundled(name: str) -> bytes:
    """Trusted script ``name`` with the codec in front of it (:func:`with_codec`)."""
    return with_codec(source(name))


@functools.cache
def _compiled(name: str, filename: str) -> bytes:
    code = compile(bundled(name), filename, "exec", dont_inherit=True)
    # The .pyc layout: magic, flags (0: timestamp-based, unchecked here), 8 bytes, code.
    return MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


def script(runner: Runner, name: str, stem: str) -> tuple[str, list[File]]:
    """``(argv[0], files)`` that run trusted script ``name`` (with the codec) as
    ``/work/<stem>``."""
    if runner.bytecode_magic == MAGIC_NUMBER.hex():
        return f"/work/{stem}.pyc", [_pyc(name, stem)]
    return f"/work/{stem}.py", [_py(name, stem)]


def _pyc(name: str, stem: str) -> File:
    return f"{stem}.pyc", _compiled(name, f"/work/{stem}.py"), 0o444


def _py(name: str, stem: str) -> File:
    return f"{stem}.py", bundled(name), 0o444


def call_server(
    runner: Runner,
    code: bytes,
    limits: Limits,
    channel: int,
    stop_fd: int = -1,
    network: Network = "none",
    companion: Companion | None = None,
) -> RunRequest:
    """The sandbox run that loads submission ``code`` and answers calls on fd 3, which is
    ``channel`` (given to the run); writing to ``stop_fd`` kills it early; ``companion``
    (the other end of the channel) is served by the thread that supervises the run."""
    main, files = script(runner, CALLSERVER, "_assay_callserver")
    return RunRequest(
        "python",
        [main, "/work/solution.py"],
        [*files, ("solution.py", code, 0o644)],
        limits=limits,
        pass_fds=(channel,),
        stop_fd=stop_fd,
        network=network,
        companion=companion,
    )
