"""Runs a task's hidden tests inside a verification sandbox (never inside the session).

Stdlib only; runs in the fork server's interpreter (site already processed at its start, so a
``.pth``, ``sitecustomize.py`` or ``usercustomize.py`` in the workspace is never loaded).
Reads its spec (argv[1]) and a per-run secret (stdin), then reports one line per test on fd 3,
each prefixed with the secret: a test without a ``passed`` line did not pass. Nothing of the
workspace is imported before pytest (when used) is; afterwards an import finder refuses to
load any standard library, pytest or pluggy module from the workspace.
"""

import json
import os
import sys
import time
from typing import Any

from verify_watch import changed, snapshot  # type: ignore[import-not-found]  # shipped beside


def _make_emit() -> Any:
    """The one writer of report lines; the secret lives only in its closure (not a global a
    module of the workspace could import from ``__main__``)."""
    write, prefix = os.write, sys.stdin.buffer.read(64).strip() + b" "
    dumps = json.dumps
    # fd 0 is a memfd the code under test could re-read (pread, /proc/self/fd/0): replace it.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def emit(msg: dict[str, Any]) -> None:
        write(3, prefix + dumps(msg).encode() + b"\n")

    return emit


def _stdlib_names() -> set[str]:
    """The standard library's top-level module names (``sys.stdlib_module_names`` from
    Python 3.10; an image's older Python: its builtins and what its stdlib directories hold)."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return set(names)
    import sysconfig

    found = set(sys.builtin_module_names)
    stdlib = sysconfig.get_paths()["stdlib"]
    for where in (stdlib, os.path.join(stdlib, "lib-dynload")):
        try:
            entries = os.listdir(where)
        except OSError:
            continue
        found.update(e.split(".")[0] for e in entries if e.split(".")[0].isidentifier())
    return found - {"site-packages", "dist-packages"}


# ``test`` is CPython's own regression-test package, which nothing trusted imports: a
# repository's ``test`` package is its own (``test.conftest``), as with pytest outside.
_GUARDED = (_stdlib_names() - {"test"}) | {
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "py",
    "exceptiongroup",
    "tomli",
    "sitecustomize",
    "usercustomize",
}


class Guard:
    """Module names the workspace may not shadow (its ``json.py`` or ``pytest/``)."""

    def __init__(self, base: list[str]) -> None:
        import importlib.machinery

        self.base = base
        self.finder = importlib.machinery.PathFinder
        self.frozen = importlib.machinery.FrozenImporter

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        if path is not None or name.partition(".")[0] not in _GUARDED:
            return None
        if name in sys.builtin_module_names or self.frozen.find_spec(name) is not None:
            return None  # found by the importers after this one, never in the workspace
        spec = self.finder.find_spec(name, self.base)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


def _prepare(spec: dict[str, Any], base: list[str]) -> None:
    """The path of an editable install: the workspace's import roots, the project's
    metadata, then the environment's own packages (behind the guard)."""
    sys.path[:] = [*spec["roots"], spec["site"], *base]
    sys.meta_path.insert(0, Guard(base))
    os.chdir(os.path.join(spec["root"], spec.get("cwd") or "."))
    for key in [k for k in os.environ if k.startswith(("PYTEST", "PYTHON"))]:
        del os.environ[key]


def run_plain(
    spec: dict[str, Any], base: list[str], _emit: Any, pinned: dict[str, bytes]
) -> list[str]:
    """Top-level zero-argument ``test*`` functions (named by the trusted side, which parsed
    the files: no ``ast`` import here, ~6 ms), called in file order."""
    import importlib.util

    root = spec["root"]
    _prepare(spec, base)
    watched = [m for m in sys.modules if m.startswith("importlib")]
    before = snapshot(watched)
    for rel in spec["tests"]:
        path = os.path.join(root, rel)
        names = spec["plain"][rel]
        sys.path[0:0] = [os.path.dirname(path)]
        modname = os.path.splitext(os.path.basename(rel))[0]
        try:
            mspec = importlib.util.spec_from_file_location(modname, path)
            assert mspec is not None
            module = importlib.util.module_from_spec(mspec)
            sys.modules[modname] = module
            # From the bytes read before any workspace code ran: code under test that
            # rewrites a later test file on disk changes nothing.
            exec(compile(pinned[path], path, "exec", dont_inherit=True), module.__dict__)
        except BaseException as exc:
            msg = f"collection: {type(exc).__name__}: {str(exc)[:300]}"
            for name in names:
                _emit({"id": f"{rel}::{name}", "outcome": "failed", "message": msg})
            continue
        for name in names:
            nodeid = f"{rel}::{name}"
            fn = getattr(module, name, None)
            if not callable(fn):
                _emit({"id": nodeid, "outcome": "failed", "message": "not a function"})
                continue
            try:
                fn()
            except BaseException as exc:  # no traceback module: ~7 ms to import
                tb, where = exc.__traceback__, ""
                while tb is not None:
                    where = f" ({tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
                    tb = tb.tb_next
                msg = f"{type(exc).__name__}: {str(exc)[:400]}{where}"
                _emit({"id": nodeid, "outcome": "failed", "message": msg})
            else:
                _emit({"id": nodeid, "outcome": "passed"})
    return list(changed(before, watched))


def _outcome(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.outcome == "skipped" else "passed"  # xpass: passed
    return str(report.outcome)


def run_pytest(
    spec: dict[str, Any], base: list[str], _emit: Any, pinned: dict[str, bytes]
) -> list[str]:
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest

    _pin_pytest(pinned)
    root = spec["root"]
    _prepare(spec, base)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    watched = [m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "pluggy")]
    before = snapshot(watched)

    class Collect:
        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.when == "call" or report.outcome != "passed":
                _emit(
                    {
                        "id": report.nodeid,
                        "outcome": _outcome(report),
                        "message": str(report.longrepr or "")[-600:],
                    }
                )

        def pytest_collectreport(self, report: Any) -> None:
            if report.outcome == "failed":
                msg = "collection: " + str(report.longrepr or "")[-600:]
                _emit({"collect_error": report.nodeid, "message": msg})

    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", root]
    if spec["ini"]:  # the task has no pytest configuration of its own
        args += ["-c", spec["ini"]]
    args += spec["pytest_args"] if spec.get("pytest_args") is not None else spec["tests"]
    code = pytest.main(args, plugins=[Collect()])
    _emit({"exit": int(code)})
    return list(changed(before, watched))


def _pin_pytest(pinned: dict[str, bytes]) -> None:
    """pytest loads test files and conftests through its assertion rewriter: make it read
    the pinned bytes (read before any workspace code ran), and never a cached ``.pyc`` (one
    written at run time by code under test would be loaded as the test)."""
    import ast as _ast

    from _pytest.assertion import rewrite

    original = rewrite._rewrite_test

    def pinned_rewrite(fn: Any, config: Any) -> Any:
        data = pinned.get(str(fn))
        if data is None:
            return original(fn, config)
        tree = _ast.parse(data, filename=str(fn))
        rewrite.rewrite_asserts(tree, data, str(fn), config)
        return os.stat(fn), compile(tree, str(fn), "exec", dont_inherit=True)

    rewrite._rewrite_test = pinned_rewrite
    rewrite._read_pyc = lambda *args, **kwargs: None


_BOOT = """
import sys
def _assay_boot():
    # Installed before any workspace code, and first: the guard (every standard library
    # module imported from here on, the boot's own included, comes from the library, never
    # from an import root of the workspace), then this process's registration.
    sys.meta_path.insert(0, __import__("assay_verify_guard").Guard(sys.path[1:]))
    import atexit, os, socket
    where = os.environ.get("ASSAY_VERIFY_SOCKET")
    if not where:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(where)
    token, pid, getframe = sock.recv(64), os.getpid(), sys._getframe
    main = __import__("assay_verify_main")
    # The test framework and the builtins as they are before any workspace code: an exit
    # after the code under test changed them counts nothing.
    import unittest
    watch = __import__("assay_verify_watch")
    watched = [m for m in sys.modules if m.partition(".")[0] == "unittest"]
    before, changed, write = watch.snapshot(watched), watch.changed, os.write
    target = main.target()
    if target is not None:  # a test script of the task's: run here, never returns
        main.run(target, sock, token, pid, watched, before)
    def done():
        # Only the process that registered, and only from the interpreter's own shutdown
        # (no Python frame calls it: code that runs the exit functions itself, or a forked
        # child exiting normally, does not count as this process's normal exit).
        if os.getpid() == pid and getframe(0).f_back is None:
            tampered = changed(before, watched)
            if tampered:
                write(2, ("assay: the code under test changed the test framework or the "
                          "builtins (%s): this exit counts nothing\\n" % ", ".join(tampered)).encode())
                return
            sock.sendall(token)
    atexit.register(done)
try:
    _assay_boot()
except BaseException as exc:
    # Fail closed: a process whose boot failed would run unregistered, its exit uncounted.
    import os
    os.write(2, ("assay: the verification boot failed (%s: %s): this process stops\\n"
                 % (type(exc).__name__, exc)).encode())
    os._exit(70)
finally:
    del _assay_boot
"""


def _boot_main_files(spec: dict[str, Any]) -> dict[str, str]:
    """The boot's test-script runner (``verify_boot.py``, shipped beside this file, with the
    ``pyexit.py`` and ``verify_watch.py`` it imports) and its settings, as modules of the boot
    zip: the trusted scripts' sources among them, read now, before any code of the
    workspace has run."""
    root = spec["root"]
    trusted = sorted(os.path.realpath(os.path.join(root, p)) for p in spec.get("trusted") or [])
    sources = {}
    for path in trusted:
        try:
            with open(path, "rb") as fh:
                sources[path] = fh.read()
        except OSError:  # named by the command but not a file of the task's: not trusted
            pass
    here = os.path.dirname(os.path.abspath(__file__))
    files = {}
    for name, module in (
        ("verify_boot.py", "assay_verify_main.py"),
        ("pyexit.py", "assay_pyexit.py"),
        ("verify_watch.py", "assay_verify_watch.py"),
    ):
        with open(os.path.join(here, name)) as fh:
            files[module] = fh.read()
    files["assay_verify_conf.py"] = (
        f"ROOT = {root!r}\nSOURCES = {sources!r}\nCOMMAND = {spec['command']!r}\n"
    )
    return files


def _boot_zip(guard_source: str, modules: dict[str, str]) -> int:
    """A sealed memfd holding a zip with the boot's ``sitecustomize`` and the guard: on
    ``PYTHONPATH`` as /proc/PID/fd/N, the same bytes for every Python process of the
    command, which no process of the workspace can change."""
    import fcntl
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("sitecustomize.py", _BOOT)
        zf.writestr("assay_verify_guard.py", guard_source)
        for name, source in modules.items():
            zf.writestr(name, source)
    fd = os.memfd_create("assay-boot", os.MFD_ALLOW_SEALING)
    os.write(fd, buf.getvalue())
    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def _guard_source() -> str:
    names = sorted(_GUARDED)
    return (
        "import sys\nimport importlib.machinery\n"
        f"_GUARDED = frozenset({names!r})\n"
        "class Guard:\n"
        "    def __init__(self, base):\n"
        "        self.base = [p for p in base if not p.startswith('/work')]\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if path is not None or name.partition('.')[0] not in _GUARDED:\n"
        "            return None\n"
        "        if name in sys.builtin_module_names:\n"
        "            return None\n"
        "        if importlib.machinery.FrozenImporter.find_spec(name) is not None:\n"
        "            return None\n"
        "        spec = importlib.machinery.PathFinder.find_spec(name, self.base)\n"
        "        if spec is None:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return spec\n"
    )


class Registry:
    """The Python processes of a command: each registers as it starts (the boot connects
    here and gets a token) and counts as finished only if it sends the token back at a
    normal interpreter exit. A process that registered and never did (``os._exit``, a
    signal) means the command ended early: its exit status counts nothing."""

    def __init__(self) -> None:
        import secrets
        import socket
        import threading

        self.path = f"/tmp/.assay-verify-{os.getpid()}-{secrets.token_hex(6)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(64)
        self.started = 0
        self.finished = 0
        self.lock = threading.Lock()
        self.threads: list[Any] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self.lock:
                self.started += 1
                self.threads.append(t)
            t.start()

    def _serve(self, conn: Any) -> None:
        token = os.urandom(16)
        try:
            conn.sendall(token)
            got = b""
            while len(got) < len(token):
                chunk = conn.recv(len(token) - len(got))
                if not chunk:
                    break
                got += chunk
        except OSError:
            got = b""
        finally:
            conn.close()
        if got == token:
            with self.lock:
                self.finished += 1

    def close(self) -> tuple[int, int]:
        self.sock.close()
        with self.lock:
            threads = list(self.threads)
        deadline = time.monotonic() + 5.0  # for all of them: a process still running after
        for t in threads:  # the command (a server it left behind) did not exit normally
            t.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            return self.started, self.finished


def run_command(spec: dict[str, Any], _emit: Any) -> list[str]:
    """A test_command that is not one pytest invocation: its exit status is the outcome,
    counted only if every Python process it started got through a normal exit."""
    import subprocess

    root = spec["root"]
    registry = Registry()
    boot = _boot_zip(_guard_source(), _boot_main_files(spec))
    # ``python`` and ``python3`` are this interpreter whatever the image calls its own
    # (Debian has no ``python``; SWE-bench commands say ``python``).
    here = f"/tmp/.assay-verify-bin-{os.getpid()}"
    os.makedirs(here, exist_ok=True)
    for name in ("python", "python3"):
        if not os.path.lexists(os.path.join(here, name)):
            os.symlink(sys.executable, os.path.join(here, name))
    env = {
        "PATH": f"{here}:{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": ":".join([f"/proc/{os.getpid()}/fd/{boot}", *spec["roots"], spec["site"]]),
        "ASSAY_VERIFY_SOCKET": registry.path,
    }
    t = time.monotonic()
    done = subprocess.run(
        ["/bin/bash", "-c", spec["command"]],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        pass_fds=(boot,),
    )
    started, finished = registry.close()
    tail = (done.stdout + done.stderr)[-600:].decode(errors="replace")
    outcome = "passed" if done.returncode == 0 else "failed"
    message = f"exit {done.returncode} after {time.monotonic() - t:.2f}s: {tail}"
    if finished < started:
        outcome = "failed"
        message = (
            f"{started - finished} of {started} Python processes of the command ended early "
            f"(no normal interpreter exit); {message}"
        )
    _emit({"exit": done.returncode})
    _emit({"id": "test_command", "outcome": outcome, "message": message})
    return []


def _links(spec: dict[str, Any]) -> None:
    """The workspace's symlinks (the sandbox stages regular files only)."""
    root = spec["root"]
    for rel, target in sorted((spec.get("links") or {}).items()):
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)


def main() -> None:
    # Not a global: code under test would have to walk the frames to find the writer.
    emit = _make_emit()
    sys.stdin = open(os.devnull)
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    os.unlink(sys.argv[1])
    _links(spec)
    base = [p for p in sys.path[1:] if p and not p.startswith("/work")]
    _GUARDED.update(spec.get("guarded") or [])
    pinned = {}
    for rel in spec["pinned"]:
        path = os.path.join(spec["root"], rel)
        with open(path, "rb") as fh:
            pinned[path] = fh.read()
    if spec["mode"] == "plain":
        tampered = run_plain(spec, base, emit, pinned)
    elif spec["mode"] == "pytest":
        tampered = run_pytest(spec, base, emit, pinned)
    else:
        tampered = run_command(spec, emit)
    emit({"end": True, "tampered": tampered})


try:
    main()
except BaseException:
    import traceback

    traceback.print_exc()
    raise
finally:
    sys.stdout.flush()
    os._exit(0)
