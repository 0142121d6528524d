"""What the code under test may not change in the process that runs the tests: the identity
of every function of the test framework's modules, of every attribute of their classes, and
of the builtins. Taken before any code of the workspace runs, compared after the tests.

Shipped beside ``verify_runner`` (which imports it) and in the boot zip as
``assay_verify_watch`` (for ``verify_boot``): run by the sandbox's interpreter, which may be
an image's older one: Python 3.6 syntax, standard library only.
"""

import builtins
import sys


def snapshot(modules: "list[str]") -> "dict[tuple[str, ...], int]":
    """Identity of every function of ``modules`` and every attribute of their classes (and
    of builtins): what a workspace that patches the test runner or builtins changes."""
    seen = {}  # type: dict[tuple[str, ...], int]
    for key, value in list(vars(builtins).items()):
        if callable(value):
            seen[("builtins", key)] = id(value)
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


def changed(before: "dict[tuple[str, ...], int]", modules: "list[str]") -> "list[str]":
    """What differs (changed, added or removed) between ``before`` and now."""
    after = snapshot(modules)
    keys = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return sorted(".".join(k) for k in keys)[:5]
