"""Runs inside a sandbox that never executes submission code: the test side of script tests.

The trusted test code (a HumanEval ``check``, MBPP asserts...) runs here, and every name it
would take from the submission is a proxy that forwards the call over fd 3 to the separate
sandbox where the submission runs, and turns the answer (plain data) back into builtin
values. So every assertion runs where the submission cannot reach: exiting early, patching
builtins or lying ``__eq__`` methods act on the submission's own process only. One report
line per test goes to fd 4, then an end line.
"""

import builtins
import io
import json
import os
import sys
import types

from _assay_codec import BUILTIN_TYPES, decode, encode, exact, items, rebuild, type_tag


class RemoteError(Exception):
    """The submission raised (its own failure)."""


class RemoteGone(Exception):
    """The submission's process is gone (time limit, crash, exit)."""


MAX_REPLY = 64 << 20
_reader = io.BufferedReader(io.FileIO(3, "r", closefd=False))


def _other(v, depth):
    if type(v) is Remote:
        return ["o", object.__getattribute__(v, "_id")]
    named = type_tag(v)
    if named is not None:
        return named
    raise TypeError(f"cannot pass a {type(v).__name__} to the submission")


def enc(v):
    return encode(v, _other)


def _special(tag, d, depth):
    if tag == "T":
        return BUILTIN_TYPES[exact(d[1], str)]
    if tag == "o":
        return Remote(exact(d[1], int), exact(d[2], bool), exact(d[3], str))
    # An iterator, range or dict view the submission returned, materialised.
    return rebuild(exact(d[1], str), items(d[3], _special, depth))


def dec(d):
    return decode(d, _special)


class Remote:
    """An object that lives in the submission's process. Equality is identity: nothing the
    submission defines is ever asked whether it equals an expected value."""

    __slots__ = ("_id", "_truthy", "_type")

    def __init__(self, ident, truthy, tname):
        object.__setattr__(self, "_id", ident)
        object.__setattr__(self, "_truthy", truthy)
        object.__setattr__(self, "_type", tname)

    def __bool__(self):
        return object.__getattribute__(self, "_truthy")

    def __eq__(self, other):
        mine = object.__getattribute__(self, "_id")
        return type(other) is Remote and object.__getattribute__(other, "_id") == mine

    def __hash__(self):
        return hash(("remote", object.__getattribute__(self, "_id")))

    def __repr__(self):
        return f"<{object.__getattribute__(self, '_type')} object in the submission>"

    def __getattr__(self, name):
        ref = ["o", object.__getattribute__(self, "_id")]
        return request({"op": "getattr", "obj": ref, "name": name})

    def __setattr__(self, name, value):
        ref = ["o", object.__getattribute__(self, "_id")]
        request({"op": "setattr", "obj": ref, "name": name, "value": enc(value)})

    def __call__(self, *args, **kwargs):
        ref = ["o", object.__getattribute__(self, "_id")]
        kw = {k: enc(v) for k, v in kwargs.items()}
        return request({"op": "call", "obj": ref, "args": [enc(a) for a in args], "kwargs": kw})


def call(name, args, kwargs):
    kw = {k: enc(v) for k, v in kwargs.items()}
    return request({"fn": name, "args": [enc(a) for a in args], "kwargs": kw})


def request(req):
    data = (json.dumps(req) + "\n").encode()
    try:
        while data:
            data = data[os.write(3, data) :]
    except OSError:
        raise RemoteGone("the submission's process is gone") from None
    try:
        line = _reader.readline(MAX_REPLY)
    except OSError:  # reset by a peer that died with our request unread
        raise RemoteGone("the submission's process is gone") from None
    if not line.endswith(b"\n"):
        raise RemoteGone("the submission's process is gone")
    reply = json.loads(line)
    if "error" in reply:
        raise RemoteError(str(reply["error"]))
    return dec(reply["ok"])


def proxy(name):
    def forward(*args, **kwargs):
        return call(name, args, kwargs)

    forward.__name__ = forward.__qualname__ = name
    return forward


def report(obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(4, data) :]


def run_test(test, names, imports=(), variables=()):
    env = {"__name__": "__assay_test__", "__builtins__": builtins}
    for name in names:  # setup code (MBPP's test_setup_code) may build objects already
        env[name] = proxy(name)
    if test.get("setup"):
        try:
            exec(compile(test["setup"], "<setup>", "exec", dont_inherit=True), env)
        except Exception:
            pass  # a prompt that is not runnable alone only loses its helpers
    for name in names:  # the submission's functions win over the prompt's stubs
        env[name] = proxy(name)
    for alias, module in imports:  # modules the submission imported, imported here
        try:
            env[alias] = __import__(module, fromlist=["_"])
        except Exception:
            pass
    for name in variables:
        if name not in env:
            try:
                env[name] = request({"op": "global", "name": name})
            except RemoteError:
                pass
    try:
        exec(compile(test["code"], "<test>", "exec", dont_inherit=True), env)
        if test.get("call"):
            eval(compile(test["call"], "<call>", "eval", dont_inherit=True), env)
    except RemoteGone as exc:
        return {"outcome": "gone", "message": str(exc)}
    except RemoteError as exc:
        return {"outcome": "raised", "message": str(exc)[:500]}
    except AssertionError as exc:
        return {"outcome": "failed", "message": ("AssertionError: " + str(exc))[:500]}
    except Exception as exc:
        return {"outcome": "failed", "message": f"{type(exc).__name__}: {str(exc)[:400]}"}
    return {"outcome": "passed"}


class _SolutionModule(types.ModuleType):
    """``import solution`` on the test side: every attribute is a proxy to the submission."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = proxy(name)
        setattr(self, name, value)
        return value


def run_pytest(test, names):
    """A pytest file (KodCode style) run here, against proxies, with plugin autoload off and
    no conftest.py: the only files on this side are ours."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest

    module = _SolutionModule("solution")
    for name in names:
        setattr(module, name, proxy(name))
    sys.modules["solution"] = module
    with open("/work/test_solution.py", "w") as fh:
        fh.write(test["code"])
    outcomes = []

    class Collect:
        def pytest_runtest_logreport(self, report):
            if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
                outcomes.append((report.nodeid, report.outcome, str(report.longrepr or "")[-400:]))

        def pytest_collectreport(self, report):
            if report.outcome == "failed":
                outcomes.append((report.nodeid, "failed", str(report.longrepr or "")[-400:]))

    code = pytest.main(
        [
            "-q",
            "-p",
            "no:cacheprovider",
            "--noconftest",
            "--rootdir",
            "/work",
            "/work/test_solution.py",
        ],
        plugins=[Collect()],
    )
    if not outcomes or int(code) not in (0, 1):
        return {"outcome": "failed", "message": f"pytest exit {int(code)}: no test ran"}
    bad = [(n, t) for n, o, t in outcomes if o != "passed"]
    if not bad:
        return {"outcome": "passed"}
    text = " ".join(t for _, t in bad)
    if "RemoteGone" in text:
        return {"outcome": "gone", "message": "the submission's process is gone"}
    outcome = "raised" if "RemoteError" in text else "failed"
    return {"outcome": outcome, "message": "; ".join(f"{n}: {t[-200:]}" for n, t in bad)[:500]}


def main():
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    os.unlink(sys.argv[1])
    for i, test in enumerate(spec["tests"]):
        try:
            if test.get("pytest"):
                result = run_pytest(test, spec["names"])
            else:
                result = run_test(
                    test, spec["names"], spec.get("imports", []), spec.get("variables", [])
                )
        except RemoteGone as exc:
            result = {"outcome": "gone", "message": str(exc)}
        result["index"] = i
        report(result)
        if result["outcome"] == "gone":
            break
        if spec.get("stop_on_failure") and result["outcome"] != "passed":
            break
    report({"end": True})


try:
    main()
except BaseException:
    # Imported only here: ``traceback`` (with linecache, tokenize, textwrap) is not in the
    # fork server's image and costs a run ~3.7 ms of CPU to import.
    import traceback

    traceback.print_exc()
    raise
