"""Run a Python program in an already-initialised interpreter, as ``python3 main.py`` would.

This is what makes the fork server fast: the child has a ready interpreter, so a run costs a
fork instead of an interpreter start. The emulation covers what programs observe: ``__main__``,
``sys.argv``, ``sys.path[0]``, fresh standard streams, exit codes, atexit, non-daemon threads,
and tracebacks that start at the program's own frame.
"""

from __future__ import annotations

import contextlib
import io
import marshal
import os
import sys
import types
from importlib.util import MAGIC_NUMBER
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

# Imported here, in the fork server (``atexit``, which it imports, costs ~0.5 ms per run).
if __package__:
    from . import pyexit
else:  # gVisor's exec server made this module from its text, after ``assay_pyexit``
    pyexit = sys.modules["assay_pyexit"]

_PREBUILT: tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper] | None = None
_KEPT: list[object] = []
#: Set by the fork server where launcher.c's library is loaded: reports the pages a run
#: wrote to an fd (``Native.report_pages``), which a calibration run does at its end.
report_pages: Callable[[int], None] | None = None
#: A slot's calibration run (the supervisor's own ``print(1)``, the slot's first run: see
#: sandbox.py) has this argument after its program: after the run, the program process
#: writes the pages it wrote to its stdout (``report_pages``).
CALIBRATE = "--assay-report-pages"


def prebuild_streams() -> None:
    """Build the run's standard streams once, in the fork server (a run then only assigns
    them: building three text streams in a fresh fork costs ~0.4 ms of copy-on-write faults).

    They refer to fds 0, 1, 2 by number. While they are built those fds are stand-ins of the
    kinds a run has (stdin a memfd at offset 0, stdout and stderr pipes), so what the objects
    cache (seekable, position, block size) is what they would have cached in the run.
    """
    global _PREBUILT
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    stand_in = os.memfd_create("stdin", os.MFD_CLOEXEC)
    r, w = os.pipe2(os.O_CLOEXEC)
    try:
        os.dup2(stand_in, 0)
        os.dup2(w, 1)
        os.dup2(w, 2)
        _PREBUILT = _make_streams()
    finally:
        for fd, saved_fd in enumerate(saved):
            os.dup2(saved_fd, fd)
            os.close(saved_fd)
        for fd in (stand_in, r, w):
            os.close(fd)


def _make_streams() -> tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper]:
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")
    stdout = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8", write_through=False
    )
    stderr = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    return stdin, stdout, stderr


def _streams() -> None:
    global _PREBUILT
    if _PREBUILT is not None:
        (stdin, stdout, stderr), _PREBUILT = _PREBUILT, None
    else:
        stdin, stdout, stderr = _make_streams()
    # The interpreter's own streams stay referenced: finalising them here (close, flush of
    # empty buffers) would only cost time; the process ends with os._exit anyway.
    _KEPT.extend((sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__))
    sys.stdin = sys.__stdin__ = stdin  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = stdout  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = stderr  # type: ignore[misc]


def run(path: str, argv: list[str], base_path: list[str]) -> None:
    """Execute ``path`` as ``__main__`` and terminate the process with its exit status."""
    _streams()
    sys.argv = list(argv)
    sys.path[:] = [os.path.dirname(path), *base_path]
    if "random" in sys.modules:  # imported in the fork server: reseed like a fresh process
        sys.modules["random"].seed()
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    main.__cached__ = None  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    status = 0
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        if path.endswith(".pyc") and source[:4] == MAGIC_NUMBER:
            code = marshal.loads(source[16:])  # a trusted script the supervisor compiled
        else:
            code = compile(source, path, "exec", dont_inherit=True)
        del source
        exec(code, main.__dict__)
    except SystemExit as exc:
        status = pyexit.exit_status(exc)
    except BaseException as exc:  # the interpreter prints it and exits 1
        tb = exc.__traceback__
        if tb is not None and tb.tb_frame.f_code is run.__code__:
            tb = tb.tb_next  # the traceback starts at the program, as in `python3 main.py`
            exc.__traceback__ = tb
        try:
            sys.excepthook(type(exc), exc, tb)
        except BaseException:
            pass
        status = 1
    status = pyexit.shutdown(status)
    if report_pages is not None and argv[1:] == [CALIBRATE]:
        # A slot's calibration run (sandbox.py): its pages, after everything else it wrote.
        with contextlib.suppress(OSError):
            report_pages(1)
    os._exit(status)
