"""Runs inside the sandbox: load the submission, then answer function calls on fd 3.

Requests and replies travel on fd 3, one JSON object per line (newline-delimited,
no length prefix). A request is ``{"fn": name, "args": [tagged...]}``; a reply is
``{"ok": tagged}`` or ``{"error": "Type: message"}``. Values are written with the shared
codec (``_assay_codec``, shipped next to this file from ``codec.py``): a subclass of a
builtin type goes as its base, generators, builtin iterators, ranges and dict views are
materialised (tag ``g``: type name, truth value, items), other objects stay here behind a
handle (tag ``o``). Whatever this
process sends is only *data* to the trusted side, which decodes it strictly: a submission
that tampers with this file can still only answer, never judge.
"""

import io
import itertools
import json
import os
import sys
import types

from _assay_codec import BUILTIN_TYPES, MAX_ITEMS, Malformed, decode, encode, exact, type_tag

OBJECTS = []

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

#: Subclasses of builtin types travel as their base value, read with the base type's own
#: methods (a subclass's overrides are not asked).
BASES = (
    (int, int.__int__),
    (float, float.__float__),
    (complex, lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v))),
    (str, str.__str__),
    ((bytes, bytearray), lambda v: bytes(memoryview(v))),
    (dict, lambda v: dict(dict.items(v))),
    (list, list),
    (tuple, tuple),
    (set, set),
    (frozenset, frozenset),
)


def other(v, depth):
    """What is not an exact builtin: a subclass as its base; a generator, builtin iterator,
    range or dict view materialised; a builtin type by name; anything else stays here and
    the other side gets an opaque handle it can pass back, call, or read attributes of (its
    truth value is the only thing that leaves)."""
    for base, plain in BASES:
        if isinstance(v, base):
            return encode(plain(v), other, depth)
    if isinstance(v, ITERABLES) or (
        type(v).__module__ in ("builtins", "itertools") and hasattr(type(v), "__next__")
    ):
        truthy = bool(v)
        return [
            "g",
            type(v).__name__,
            truthy,
            [enc(x, depth + 1) for x in itertools.islice(v, MAX_ITEMS)],
        ]
    named = type_tag(v)
    if named is not None:
        return named
    OBJECTS.append(v)
    try:
        truthy = bool(v)
    except Exception:
        truthy = True
    return ["o", len(OBJECTS) - 1, truthy, type(v).__name__]


def enc(v, depth=0):
    return encode(v, other, depth)


def special(tag, d, depth):
    if tag == "T":
        return BUILTIN_TYPES[exact(d[1], str)]
    if tag == "o":
        return OBJECTS[exact(d[1], int)]
    raise Malformed(f"unexpected tag {tag!r}")


def dec(d):
    return decode(d, special)


def main():
    channel = io.FileIO(3, "r+", closefd=False)
    reader = io.BufferedReader(channel)
    source_path = sys.argv[1]
    module = types.ModuleType("solution")
    module.__file__ = source_path
    sys.modules["solution"] = module
    try:
        with open(source_path, "rb") as fh:
            source = fh.read()
        code = compile(source, source_path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        # It does not compile: one line, as the script path words it on the trusted side
        # ("SyntaxError: invalid syntax (solution.py, line 3)"), so the format never shows.
        sys.stderr.write(f"{type(exc).__name__}: {exc}")
        sys.stderr.flush()
        sys.exit(1)
    try:
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
