"""The fork server's boot script: never imported, only executed by the sandbox interpreter.

The supervisor starts ``python -I -c BOOT <bundle fd> <control fd>``: ``BOOT`` (see
``_zygote.py``) executes this file's text, read from a memfd, followed by a call of
:func:`run` with the sources of every module of this package. So the fork server's command
line, its ``sys.path`` and its modules' file names (``/assay/_inside/*.py``) name nothing of
the host: every sandboxed Python program is a fork of it, and sees all three.
"""

import sys


def run(sources: dict[str, str]) -> None:
    from importlib.machinery import ModuleSpec

    class Loader:
        def __init__(self, name: str) -> None:
            self.name = name

        def create_module(self, spec: ModuleSpec) -> None:
            return None

        def exec_module(self, module: object) -> None:
            path = f"/assay/_inside/{self.name}.py"
            code = compile(sources[self.name], path, "exec", dont_inherit=True)
            exec(code, module.__dict__)

    class Finder:
        @staticmethod
        def find_spec(fullname: str, path: object = None, target: object = None) -> object:
            if fullname == "_inside":
                spec = ModuleSpec(
                    fullname,
                    Loader("__init__"),  # type: ignore[arg-type]  # duck-typed loader
                    origin="/assay/_inside/__init__.py",
                    is_package=True,
                )
            else:
                package, _, name = fullname.rpartition(".")
                if package != "_inside" or name not in sources:
                    return None
                spec = ModuleSpec(
                    fullname,
                    Loader(name),  # type: ignore[arg-type]  # duck-typed loader
                    origin=f"/assay/_inside/{name}.py",
                )
            spec.has_location = True
            return spec

    sys.meta_path.insert(0, Finder)  # type: ignore[arg-type]  # duck-typed finder
    del sys.argv[1]  # the bundle's fd: the control socket's is now argv[1]
    from _inside import zygote  # type: ignore[import-not-found]  # found by Finder above

    zygote.main()
