"""The judge's trusted in-sandbox scripts (the call server, the test harness).

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

from ..runner import Runner

_PKG = resources.files("assay.judge._inside")
CALLSERVER = "callserver.py"
HARNESS = "harness.py"


@functools.cache
def source(name: str) -> bytes:
    return _PKG.joinpath(name).read_bytes()


@functools.cache
def _compiled(name: str, filename: str) -> bytes:
    code = compile(source(name), filename, "exec", dont_inherit=True)
    # The .pyc layout: magic, flags (0: timestamp-based, unchecked here), 8 bytes, code.
    return MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


def script(runner: Runner, name: str, stem: str) -> tuple[str, tuple[str, bytes, int]]:
    """``(argv[0], file entry)`` that runs trusted script ``name`` as ``/work/<stem>``."""
    if runner.sandbox.zygote_info.get("bytecode_magic") == MAGIC_NUMBER.hex():
        path = f"/work/{stem}.py"
        return f"/work/{stem}.pyc", (f"{stem}.pyc", _compiled(name, path), 0o444)
    return f"/work/{stem}.py", (f"{stem}.py", source(name), 0o444)
