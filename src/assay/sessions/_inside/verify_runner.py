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


_GUARDED = _stdlib_names() | {
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


def _snapshot(modules: list[str]) -> dict[tuple[str, ...], int]:
    """Identity of every function of ``modules`` and every attribute of their classes (and
    of builtins): what a workspace that patches the test runner or builtins changes."""
    import builtins

    seen: dict[tuple[str, ...], int] = {
        ("builtins", k): id(v) for k, v in vars(builtins).items() if callable(v)
    }
    for name in modules:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        for key, value in list(vars(mod).items()):
            if not callable(value):
                continue
            seen[(name, key)] = id(value)
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                for attr, member in list(vars(value).items()):
                    if callable(member) or hasattr(type(member), "__get__"):  # descriptors
                        seen[(name, key, attr)] = id(member)
    return seen


def _changed(before: dict[tuple[str, ...], int], modules: list[str]) -> list[str]:
    """What differs (changed, added or removed) between ``before`` and now."""
    after = _snapshot(modules)
    keys = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return sorted(".".join(k) for k in keys)[:5]


def _prepare(root: str, base: list[str]) -> None:
    sys.path[:] = [root, *base]
    sys.meta_path.insert(0, Guard(base))
    os.chdir(root)
    for key in [k for k in os.environ if k.startswith(("PYTEST", "PYTHON"))]:
        del os.environ[key]


def run_plain(
    spec: dict[str, Any], base: list[str], _emit: Any, pinned: dict[str, bytes]
) -> list[str]:
    """Top-level zero-argument ``test*`` functions (named by the trusted side, which parsed
    the files: no ``ast`` import here, ~6 ms), called in file order."""
    import importlib.util

    root = spec["root"]
    _prepare(root, base)
    watched = [m for m in sys.modules if m.startswith("importlib")]
    before = _snapshot(watched)
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
    return _changed(before, watched)


def run_pytest(
    spec: dict[str, Any], base: list[str], _emit: Any, pinned: dict[str, bytes]
) -> list[str]:
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest

    _pin_pytest(pinned)
    root = spec["root"]
    _prepare(root, base)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    watched = [m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "pluggy")]
    before = _snapshot(watched)

    class Collect:
        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.when == "call" or report.outcome != "passed":
                _emit(
                    {
                        "id": report.nodeid,
                        "outcome": "passed" if report.outcome == "passed" else "failed",
                        "message": str(report.longrepr or "")[-600:],
                    }
                )

        def pytest_collectreport(self, report: Any) -> None:
            if report.outcome == "failed":
                msg = "collection: " + str(report.longrepr or "")[-600:]
                _emit({"collect_error": report.nodeid, "message": msg})

    args = [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-c",
        spec["ini"],
        "--rootdir",
        root,
        *spec["tests"],
    ]
    code = pytest.main(args, plugins=[Collect()])
    _emit({"pytest_exit": int(code)})
    return _changed(before, watched)


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


def run_command(spec: dict[str, Any], _emit: Any) -> list[str]:
    import subprocess

    root = spec["root"]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    t = time.monotonic()
    done = subprocess.run(
        ["/bin/bash", "-c", spec["command"]],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    tail = (done.stdout + done.stderr)[-600:].decode(errors="replace")
    outcome = "passed" if done.returncode == 0 else "failed"
    _emit(
        {
            "id": "test_command",
            "outcome": outcome,
            "message": f"exit {done.returncode} after {time.monotonic() - t:.2f}s: {tail}",
        }
    )
    return []


def main() -> None:
    # Not a global: code under test would have to walk the frames to find the writer.
    emit = _make_emit()
    sys.stdin = open(os.devnull)
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    os.unlink(sys.argv[1])
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
