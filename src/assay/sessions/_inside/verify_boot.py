"""The verification boot's runner of a test script (shipped in the boot zip as
``assay_verify_main``; its settings in ``assay_verify_conf``: ``ROOT``, ``TRUSTED``,
``COMMAND``).

A test script is a file the task's tests or ``test_command`` name (``python FILE``,
``python -m MODULE`` of such a file) or the command's own ``python -c CODE``. The boot runs
it here instead of letting the interpreter do it, so it sees where a ``SystemExit`` that
ends it came from: one raised through a frame of anything but the trusted scripts and the
interpreter's own library (the code under test calling ``sys.exit(0)`` while the script
imports or calls it) ends the process as an early exit: no token, the command counts
nothing. The interpreter's shutdown is then done here (non-daemon threads, exit functions,
objects, stdio) before ``os._exit``.

Stdlib only, run by the sandbox's interpreter (an image's may be older: Python 3.6 syntax).
"""

import os
import sys

import assay_pyexit as pyexit  # type: ignore[import-not-found]
import assay_verify_conf as conf  # type: ignore[import-not-found]

CODE_NAME = "<assay test_command>"


def _library():
    """The interpreter's own library directories (read-only in the sandbox)."""
    import site
    import sysconfig

    dirs = {
        sysconfig.get_paths().get(k) or "" for k in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:
        pass
    return tuple(os.path.realpath(d) + "/" for d in dirs if d and not d.startswith("/work"))


def target():
    """What this process runs if it is a test script, else None (the interpreter runs it)."""
    argv0 = sys.argv[0] if sys.argv else ""
    orig = getattr(sys, "orig_argv", None) or _cmdline()  # orig_argv: Python 3.10+
    if argv0 in ("-c", "-m"):
        if orig is None or len(orig) < len(sys.argv) + 1:
            return None
        word = orig[-len(sys.argv)]
        if argv0 == "-c":
            ok = orig[-len(sys.argv) - 1] == "-c" and word in conf.COMMAND
            return ("code", word) if ok else None
        return ("module", word) if _module_file(word) in conf.TRUSTED else None
    if argv0 and not argv0.startswith("-"):
        path = os.path.realpath(argv0)
        if path in conf.TRUSTED and os.path.isfile(path):
            return ("file", path)
    return None


def _cmdline():
    """This process's command line as the kernel has it (an image's Python before 3.10
    has no ``sys.orig_argv``)."""
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            return [os.fsdecode(word) for word in fh.read().split(b"\0")[:-1]]
    except OSError:
        return None


def _module_file(name):
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec else None
    return os.path.realpath(origin) if origin else None


def _untrusted(tb, library, trusted, root, realpath):
    """The frames between the script and the raise that are neither trusted scripts nor the
    interpreter's library: the code under test, wherever its files are."""
    out = []
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name in (CODE_NAME, __file__) or name.startswith("<frozen "):
            tb = tb.tb_next
            continue
        path = realpath(name) if name and not name.startswith("<") else name
        if path not in trusted and not path.startswith(library):
            where = path[len(root) + 1 :] if path.startswith(root + "/") else path
            out.append(f"{where}:{tb.tb_lineno}")
        tb = tb.tb_next
    return out


def run(
    found,
    sock,
    token,
    pid,
    _bound=(
        _untrusted,
        conf.TRUSTED,
        conf.ROOT,
        os.path.realpath,
        pyexit.exit_status,
        pyexit.shutdown,
        os.write,
        os.getpid,
        os._exit,
    ),
):
    """Run the test script ``found`` (from :func:`target`) as ``__main__``, then end the
    process; the token goes back only for an exit the script itself made.

    What decides that is bound here (``_bound``), when the boot imports this module before
    any code of the workspace runs: the code under test shares this process and may rebind
    this module's names, the settings' and ``os``'s; it cannot reach these."""
    untrusted, trusted, root, realpath, exit_status, shutdown, write, getpid, end = _bound
    import __main__

    library = _library()
    kind, what = found
    glb = __main__.__dict__
    glb.update({"__name__": "__main__", "__builtins__": __builtins__, "__spec__": None})
    safe = getattr(sys.flags, "safe_path", False)
    status, why = 0, ""
    try:
        if kind == "file":
            if not safe:
                sys.path.insert(0, os.path.dirname(what))
            glb["__file__"] = what
            with open(what, "rb") as fh:
                code = compile(fh.read(), what, "exec", dont_inherit=True)
            exec(code, glb)
        elif kind == "code":
            if not safe:
                sys.path.insert(0, "")
            exec(compile(what, CODE_NAME, "exec", dont_inherit=True), glb)
        else:
            import runpy

            if not safe:
                sys.path.insert(0, os.getcwd())
            runpy._run_module_as_main(what, alter_argv=True)
    except SystemExit as exc:
        status = exit_status(exc)
        raisers = untrusted(exc.__traceback__, library, trusted, root, realpath)
        if raisers:
            why = (
                f"assay: SystemExit({exc.code!r}) was raised by the code under test "
                f"({', '.join(raisers[-3:])}), not by the test script: the command ended "
                "early and counts nothing\n"
            )
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    status = shutdown(status)
    if why:
        write(2, why.encode())
    elif getpid() == pid:
        sock.sendall(token)
    end(status)
