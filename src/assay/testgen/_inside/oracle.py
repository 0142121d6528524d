"""Runs inside the sandbox: call a reference (or each of several programs) on many inputs.

The job is ``/work/job.json``. Mode ``answer``: load ``sources[0]`` as the module
``solution`` and, for each input from ``start`` on, check the contract (if any), call the
entry point under a CPU-time cap, and report the answer (tagged plain data, written with
the judge's value codec, ``assay.judge._inside.codec``, which is shipped in front of this
file), its CPU time and, with ``trace``, the lines of the program it ran.
Mode ``kill``: for each program from ``start`` on (mutants, candidates), call it on the
inputs and report which inputs give an answer other than ``expected``.

Protocol on the original stdout, one JSON line each: ``["at", i]`` before input i (``["at",
m, i]`` in kill mode), then its result; ``["end"]`` last. A run that dies mid-call (C-level
loop, memory) ends without a result for the input it was on: the host knows which from the
last ``at`` line and resumes after it. The programs' own prints go to /dev/null.
"""

import json
import os
import signal
import sys
import time
import types

from _assay_codec import decode, encode, equal

MAX_OUT = 1 << 20  # an answer longer than this (encoded) is not a usable expected value
FILES = ("/work/solution.py", "<program>")


class CallTimeout(BaseException):
    pass


def on_alarm(signum, frame):
    raise CallTimeout()


def plain_other(v, depth):
    """What the codec leaves to its hook: a subclass of a builtin type goes as its base
    value, generators, builtin iterators, ranges and dict views as the list of their items."""
    for kind in (bool, int, float, complex, str, bytes, bytearray):
        if isinstance(v, kind):
            base = str.__str__(v) if kind is str else kind(v)
            if type(base) is not kind:  # a conversion that answers with a subclass again
                raise TypeError("not a plain value: " + type(v).__name__)
            return encode(base, plain_other, depth)
    for kind in (dict, list, tuple, set, frozenset):
        if isinstance(v, kind):
            return encode(kind(v.items() if kind is dict else v), plain_other, depth)
    if isinstance(v, (types.GeneratorType, map, filter, zip, range, reversed, enumerate)) or (
        type(v).__module__ in ("builtins", "itertools") and hasattr(type(v), "__next__")
    ):
        return encode(list(v), plain_other, depth)
    if type(v).__module__ == "builtins" and type(v).__name__.startswith("dict_"):
        return encode(list(v), plain_other, depth)
    raise TypeError("not a plain value: " + type(v).__name__)


def enc(v):
    return encode(v, plain_other)


def args_of(encoded):
    return [decode(a) for a in encoded]


def load(source, filename):
    module = types.ModuleType("solution")
    module.__file__ = filename
    sys.modules["solution"] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


LINES = set()


def tracer(frame, event, arg):
    if frame.f_code.co_filename not in FILES:
        return None
    return local_tracer


def local_tracer(frame, event, arg):
    if event == "line":
        LINES.add(frame.f_lineno)
    return local_tracer


def timed_call(fn, args, cap, trace=False):
    """(status, value or message, cpu seconds)."""
    LINES.clear()
    start = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, cap)
    try:
        if trace:
            sys.settrace(tracer)
        try:
            value = fn(*args)
        finally:
            sys.settrace(None)
            signal.setitimer(signal.ITIMER_PROF, 0)
    except CallTimeout:
        return "timeout", f"over {cap:g}s of CPU", time.process_time() - start
    except RecursionError:
        return "error", "RecursionError", time.process_time() - start
    except MemoryError:
        return "error", "MemoryError", time.process_time() - start
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt,)):
            raise
        return "error", f"{type(exc).__name__}: {str(exc)[:300]}", time.process_time() - start
    return "ok", value, time.process_time() - start


def answer(job, out):
    module = load(job["sources"][0], "/work/solution.py")
    fn = getattr(module, job["entry"])
    contract = None
    if job.get("contract"):
        exec(compile(job["contract"], "<contract>", "exec"), module.__dict__)
        contract = module.__dict__["_assay_contract"]
    for i in range(job["start"], len(job["inputs"])):
        out(["at", i])
        if contract is not None:
            status, msg, _ = timed_call(contract, args_of(job["inputs"][i]), job["call_s"])
            if status != "ok":
                out(["r", i, "contract", str(msg)[:300], 0.0, []])
                continue
        status, value, cpu = timed_call(fn, args_of(job["inputs"][i]), job["call_s"], job["trace"])
        lines = sorted(LINES) if job["trace"] else []
        if status == "ok":
            try:
                value = enc(value)
                if len(json.dumps(value)) > MAX_OUT:
                    status, value = "too_big", f"answer over {MAX_OUT} bytes"
            except (TypeError, ValueError) as exc:
                status, value = "error", f"unusable answer: {exc}"
        out(["r", i, status, value, cpu, lines])


def kill(job, out):
    inputs = job["inputs"]
    expected = [decode(e) for e in job["expected"]]
    caps = job["caps"]
    atol, rtol = job["atol"], job["rtol"]
    for m in range(job["start"], len(job["sources"])):
        out(["at", m, -1])
        killed = []
        why = ""
        try:
            module = load(job["sources"][m], "<program>")
            fn = getattr(module, job["entry"])
        except BaseException as exc:
            out(["k", m, [-1], f"does not load: {type(exc).__name__}"])
            continue
        for i in range(len(inputs)):
            if job["max_kills"] and len(killed) >= job["max_kills"]:
                break
            out(["at", m, i])
            status, value, _ = timed_call(fn, args_of(inputs[i]), caps[i])
            if status == "ok":
                try:
                    got = decode(enc(value))
                except (TypeError, ValueError):
                    status, value = "error", "unusable answer"
            if status != "ok":
                killed.append(i)
                why = why or status
            elif not equal(got, expected[i], atol, rtol):
                killed.append(i)
                why = why or "wrong answer"
        out(["k", m, killed, why])


def main():
    with open("/work/job.json") as fh:
        job = json.load(fh)
    channel = os.fdopen(os.dup(1), "w")
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    sys.stdout = open(os.devnull, "w")
    signal.signal(signal.SIGPROF, on_alarm)

    def out(item):
        channel.write(json.dumps(item) + "\n")
        channel.flush()

    (answer if job["mode"] == "answer" else kill)(job, out)
    out(["end"])
    channel.flush()
    os._exit(0)


main()
