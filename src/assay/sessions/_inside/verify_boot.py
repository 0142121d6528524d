"""The verification boot's runner of a test script (shipped in the boot zip as
``assay_verify_main``; its settings in ``assay_verify_conf``: ``ROOT``, ``SOURCES`` (the
trusted scripts, path to bytes, read before any code of the workspace ran), ``COMMAND``).

A test script is a file the task's tests or ``test_command`` name (``python FILE``,
``python -m MODULE`` of such a file or of the library's, ``-m unittest``) or the command's
own ``python -c CODE``. The boot runs it here instead of letting the interpreter do it, so
it sees where a ``SystemExit`` that ends it came from: one raised through a frame of
anything but the trusted scripts and the interpreter's own library (the code under test
calling ``sys.exit(0)`` while the script imports or calls it) ends the process as an early
exit: no token, the command counts nothing. A frame is judged by its code, not by the file
name it carries (code the workspace compiled under a trusted name is not the trusted
code). An exit after the code under test changed the test framework (``unittest``) or the
builtins counts nothing either. The interpreter's shutdown is then done here
(``assay_pyexit``) before ``os._exit``.

Stdlib only, run by the sandbox's interpreter (an image's may be older: Python 3.6 syntax).
"""

import importlib.machinery
import os
import sys
from types import CodeType

import assay_pyexit as pyexit  # type: ignore[import-not-found]
import assay_verify_conf as conf  # type: ignore[import-not-found]
import assay_verify_watch as watch  # type: ignore[import-not-found]

CODE_NAME = "<assay test_command>"
#: Frozen modules whose file name is not their frozen name.
_FROZEN_AS = {
    "importlib._bootstrap": "_frozen_importlib",
    "importlib._bootstrap_external": "_frozen_importlib_external",
}


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
        # The task's test module, or a library's runner (``-m unittest``): run here, so a
        # SystemExit of the code under test it imports is seen for what it is.
        path = _module_file(word)
        ok = path in conf.SOURCES or (path is not None and path.startswith(_library()))
        return ("module", word) if ok else None
    if argv0 and not argv0.startswith("-"):
        path = os.path.realpath(argv0)
        if path in conf.SOURCES and os.path.isfile(path):
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


def _untrusted(tb, library, root, known, compiled, realpath):
    """The frames between the script and the raise whose code is not what its file name
    says: neither compiled from a trusted script's source (read before any code of the
    workspace ran) nor from the interpreter's library or frozen modules. That is the code
    under test, wherever its files are, and code it compiled under a trusted file name (code
    objects compare by value, whatever file name they carry)."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        name = code.co_filename
        path = realpath(name) if name and not name.startswith("<") else name
        if path not in known:
            known[path] = compiled(path, library)
        if code not in known[path]:
            where = path[len(root) + 1 :] if path.startswith(root + "/") else path
            out.append(f"{where}:{tb.tb_lineno}")
        tb = tb.tb_next
    return out


def _codes(code):
    """``code`` and every code object nested in it (its functions, classes, lambdas)."""
    out, todo = set(), [code]
    while todo:
        item = todo.pop()
        out.add(item)
        todo.extend(c for c in item.co_consts if isinstance(c, CodeType))
    return out


def _compiled(
    path,
    library,
    _bound=(conf.SOURCES, importlib.machinery.FrozenImporter.get_code, compile, open, _codes),
):
    """Every code object of ``path``'s genuine source: a trusted script's (as read before
    any code of the workspace ran), a library file's, a frozen module's; none for anything
    else."""
    sources, frozen_code, compile_, open_, codes = _bound
    try:
        if path in sources:
            source = sources[path]
        elif path.startswith("<frozen ") and path.endswith(">"):
            name = path[len("<frozen ") : -1]
            return codes(frozen_code(_FROZEN_AS.get(name, name)))
        elif path.startswith(library):
            with open_(path, "rb") as fh:
                source = fh.read()
        else:
            return set()
        return codes(compile_(source, path, "exec", dont_inherit=True))
    except Exception:
        return set()


def run(
    found,
    sock,
    token,
    pid,
    watched,
    before,
    _bound=(
        _untrusted,
        _compiled,
        _codes,
        conf.SOURCES,
        conf.ROOT,
        os.path.realpath,
        watch.changed,
        pyexit.exit_status,
        pyexit.shutdown,
        os.write,
        os.getpid,
        os._exit,
    ),
):
    """Run the test script ``found`` (from :func:`target`) as ``__main__``, then end the
    process; the token goes back only for an exit the script itself made, with the test
    framework (the ``watched`` modules) and the builtins as they were (``before``).

    What decides that is bound here (``_bound``), when the boot imports this module before
    any code of the workspace runs: the code under test shares this process and may rebind
    this module's names, the settings' and ``os``'s; it cannot reach these."""
    (untrusted, compiled, codes, sources, root, realpath) = _bound[:6]
    (changed, exit_status, shutdown, write, getpid, end) = _bound[6:]
    import __main__

    library = _library()
    known = {}  # file name -> the code objects of its genuine source
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
            code = compile(sources[what], what, "exec", dont_inherit=True)
            exec(code, glb)
        elif kind == "code":
            if not safe:
                sys.path.insert(0, "")
            code = compile(what, CODE_NAME, "exec", dont_inherit=True)
            known[CODE_NAME] = codes(code)
            exec(code, glb)
        else:
            import runpy

            if not safe:
                sys.path.insert(0, os.getcwd())
            runpy._run_module_as_main(what, alter_argv=True)
    except SystemExit as exc:
        status = exit_status(exc)
        # The first frame is this function's own.
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        raisers = untrusted(tb, library, root, known, compiled, realpath)
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
    tampered = changed(before, watched)
    if tampered and not why:
        why = (
            f"assay: the code under test changed the test framework or the builtins "
            f"({', '.join(tampered)}): the command counts nothing\n"
        )
    if why:
        write(2, why.encode())
    elif getpid() == pid:
        sock.sendall(token)
    end(status)
