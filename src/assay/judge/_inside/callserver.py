"""Runs inside the sandbox: load the submission, then answer function calls on fd 3.

Requests and replies travel on fd 3, one JSON object per line (newline-delimited,
no length prefix). A request is ``{"fn": name, "args": [tagged...]}``; a reply is
``{"ok": tagged}`` or ``{"error": "Type: message"}``. Values are encoded with the
tags of ``assay.judge.values``; only builtin types are encoded (a subclass is converted to
its base, anything else becomes an error), and generators, builtin iterators, ranges and dict
views are materialised (tag ``g``: type name, truth value, items). Whatever this
process sends is only *data* to the trusted side, which decodes it strictly: a submission
that tampers with this file can still only answer, never judge.
"""

import io
import json
import os
import sys
import types

MAX_ITEMS = 1_000_000
OBJECTS = []
BUILTIN_TYPES = {
    t.__name__: t
    for t in (
        int,
        float,
        complex,
        str,
        bytes,
        bool,
        list,
        tuple,
        dict,
        set,
        frozenset,
        type(None),
        object,
    )
}

ITERABLES = (
    types.GeneratorType,
    map,
    filter,
    zip,
    range,
    reversed,
    enumerate,
    type({}.keys()),
    type({}.values()),
    type({}.items()),
)


def enc(v, depth=0):
    if depth > 100:
        raise ValueError("result nested too deeply")
    if v is None:
        return ["n"]
    if isinstance(v, bool):
        return ["b", bool(v)]
    if isinstance(v, int):
        return ["i", format(int(v), "x")]
    if isinstance(v, float):
        return ["f", float.__repr__(float(v))]
    if isinstance(v, complex):
        return ["c", float.__repr__(v.real), float.__repr__(v.imag)]
    if isinstance(v, str):
        return ["s", str.__str__(v)]
    if isinstance(v, (bytes, bytearray)):
        return ["y", bytes(v).decode("latin-1")]
    if isinstance(v, dict):
        return [
            "d",
            [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in list(v.items())[:MAX_ITEMS]],
        ]
    for kind, tag in ((list, "l"), (tuple, "t"), (set, "S"), (frozenset, "F")):
        if isinstance(v, kind):
            return [tag, [enc(x, depth + 1) for x in list(v)[:MAX_ITEMS]]]
    if isinstance(v, ITERABLES) or (
        type(v).__module__ in ("builtins", "itertools") and hasattr(type(v), "__next__")
    ):  # generators, builtin iterators (reversed(list), iter(...)), ranges, dict views
        truthy = bool(v)
        items = [enc(x, depth + 1) for x in list(v)[:MAX_ITEMS]]
        return ["g", type(v).__name__, truthy, items]
    if isinstance(v, type) and BUILTIN_TYPES.get(v.__name__) is v:
        return ["T", v.__name__]
    # Anything else stays here; the other side gets an opaque handle it can pass back,
    # call, or read attributes of. Its truth value is the only thing that leaves.
    OBJECTS.append(v)
    try:
        truthy = bool(v)
    except Exception:
        truthy = True
    return ["o", len(OBJECTS) - 1, truthy, type(v).__name__]


def dec(d):
    tag = d[0]
    if tag == "n":
        return None
    if tag in ("b", "s"):
        return d[1]
    if tag == "i":
        return int(d[1], 16)
    if tag == "f":
        return float(d[1])
    if tag == "c":
        return complex(float(d[1]), float(d[2]))
    if tag == "y":
        return d[1].encode("latin-1")
    if tag == "d":
        return {dec(k): dec(v) for k, v in d[1]}
    if tag == "T":
        return BUILTIN_TYPES[d[1]]
    if tag == "o":
        return OBJECTS[d[1]]
    items = [dec(x) for x in d[1]]
    return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)


def main():
    channel = io.FileIO(3, "r+", closefd=False)
    reader = io.BufferedReader(channel)
    source_path = sys.argv[1]
    module = types.ModuleType("solution")
    module.__file__ = source_path
    sys.modules["solution"] = module
    try:
        with open(source_path, "rb") as fh:
            code = compile(fh.read(), source_path, "exec")
        exec(code, module.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        # The submission's failure, told without this file's frames: the traceback starts
        # at the submission's own code (a SyntaxError has none: its message says where).
        import traceback

        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != source_path:
            tb = tb.tb_next
        sys.stderr.write("".join(traceback.format_exception(type(exc), exc, tb)))
        sys.stderr.flush()
        sys.exit(1)
    while True:
        line = reader.readline()
        if not line:
            return
        req = json.loads(line)
        try:
            op = req.get("op", "call")
            if op == "getattr":
                value = getattr(dec(req["obj"]), req["name"])
            elif op == "setattr":
                setattr(dec(req["obj"]), req["name"], dec(req["value"]))
                value = None
            elif op == "global":
                value = module.__dict__[req["name"]]
            else:
                if "obj" in req:
                    fn = dec(req["obj"])
                elif hasattr(module, req["fn"]) or not hasattr(module, "Solution"):
                    fn = getattr(module, req["fn"])
                else:  # LeetCode style: a method of class Solution
                    fn = getattr(module.Solution(), req["fn"])
                kwargs = {k: dec(v) for k, v in req.get("kwargs", {}).items()}
                value = fn(*[dec(a) for a in req["args"]], **kwargs)
            reply = {"ok": enc(value)}
        except BaseException as exc:
            if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                raise
            reply = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
        data = (json.dumps(reply) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(3, view) :]


main()
