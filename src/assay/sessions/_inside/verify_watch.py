"""What the code under test may not change in the process that runs the tests: the identity
of every function of the test framework's modules, of every attribute of their classes, and
of the builtins. Taken before any code of the workspace runs, compared after the tests.

Shipped beside ``verify_runner`` (which imports it) and in the boot zip as
``assay_verify_watch`` (for ``verify_boot``): run by the sandbox's interpreter, which may be
an image's older one: Python 3.6 syntax, standard library only.
"""

import builtins
import sys
from typing import Any


def snapshot(modules: "list[str]") -> "dict[tuple[str, ...], tuple[int, ...]]":
    """What every function of ``modules`` and every attribute of their classes (and every
    builtin) is and runs: what a workspace that patches the test runner or builtins
    changes, by rebinding a name or by swapping a function's code in place."""
    seen = {}  # type: dict[tuple[str, ...], tuple[int, ...]]
    for key, value in list(vars(builtins).items()):
        if callable(value):
            seen[("builtins", key)] = _runs(value)
    for name in modules:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        for key, value in list(vars(mod).items()):
            if not callable(value):
                continue
            seen[(name, key)] = _runs(value)
            if isinstance(value, type) and getattr(value, "__module__", "") == name:
                for attr, member in list(vars(value).items()):
                    if callable(member) or hasattr(type(member), "__get__"):  # descriptors
                        seen[(name, key, attr)] = _runs(member)
    return seen


def _runs(value: "Any") -> "tuple[int, ...]":
    """The identity of ``value`` and of what calling it runs, which can change in place: a
    function's code, defaults and closure cells (or those of the functions a static or
    class method or a property holds)."""
    out = [id(value)]
    for attr in ("", "__func__", "fget", "fset", "fdel"):
        try:
            fn = getattr(value, attr) if attr else value
            code = getattr(fn, "__code__", None)
            if code is None:
                continue
            out += [id(code), id(fn.__defaults__), id(fn.__kwdefaults__)]
            for cell in fn.__closure__ or ():
                try:
                    out.append(id(cell.cell_contents))
                except ValueError:  # an empty cell
                    out.append(0)
        except Exception:
            continue
    return tuple(out)


def changed(before: "dict[tuple[str, ...], tuple[int, ...]]", modules: "list[str]") -> "list[str]":
    """What differs between ``before`` and now: a name changed or removed, or a class
    attribute added (it shadows the inherited one: ``TextTestResult.wasSuccessful``). A new
    name of a module or of the builtins changes nothing that ran before, and the libraries
    add some themselves (``unittest.IsolatedAsyncioTestCase`` on first use, the interrupt
    handler of ``catchbreak``)."""
    after = snapshot(modules)
    keys = {k for k in before if before[k] != after.get(k)}
    keys |= {k for k in after if k not in before and len(k) == 3}
    return sorted(".".join(k) for k in keys)[:5]
