"""How a Python process ends, as ``python3 main.py`` ends it, for a program that runs in a
process which then ends with ``os._exit``: ``pyrun``'s programs (the fork servers of every
tier) and the session verification's test scripts (``sessions/_inside/verify_boot``).

Both ship this text into the sandbox: the fork servers import it beside ``pyrun``, the
verification puts it in its boot zip as ``assay_pyexit``. It runs in the sandbox's
interpreter, which for the verification may be an image's older one: Python 3.6 syntax,
standard library only.
"""

import atexit
import gc
import sys

#: The status the interpreter ends with when it cannot flush stdout or stderr at exit.
FLUSH_FAILED = 120


def exit_status(exc: SystemExit) -> int:
    """The status the interpreter gives an uncaught ``SystemExit``: its code if an int
    (modulo 256), 0 for None, else 1 after printing the code to stderr."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def shutdown(status: int) -> int:
    """Do what the interpreter does at exit, in its order, and return the status to end
    with: wait for non-daemon threads, run the exit functions, flush stdout and stderr, let
    the program's objects go (an open file's buffer is written, ``__del__`` runs), flush
    again. A failed flush turns a status of 0 into 120, as in the interpreter."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        # 3.11 reports a failing exit function itself; older interpreters re-raise the
        # last failure from here, which their own exit reports and does not let change the
        # status.
        atexit._run_exitfuncs()
    except BaseException:
        pass
    flushed = _flush()
    _release(sys.modules.get("__main__"))
    return status or flushed or _flush()


def _release(main: object) -> None:
    """Let the program's objects go as the interpreter's module teardown does: ``__main__``'s
    names bound to None (those starting with ``_`` first; ``__builtins__`` kept, so a
    ``__del__`` still finds ``print``), then a collection for the objects in cycles."""
    try:
        names = getattr(main, "__dict__", {})
        for private in (True, False):
            for name in list(names):
                if name != "__builtins__" and name.startswith("_") == private:
                    names[name] = None
        gc.collect()
    except BaseException:
        pass


def _flush() -> int:
    status = 0
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            status = FLUSH_FAILED
    return status
