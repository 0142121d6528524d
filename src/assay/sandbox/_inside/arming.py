"""Everything a program process needs to arm itself, in one small value object.

The fork server builds one :class:`Arming` at start; each slot copies it with the slot's own
user and group ids (:meth:`Arming.for_slot`), and the slot's init hands it to every program
process it starts. The program process reads only this object: it never reaches into the
fork server or the slot (no import of either), so the modules of this package form a tree.

A plain ``__slots__`` class, not a dataclass: ``dataclasses`` would pull ``inspect``,
``ast`` and ``dis`` (~1 MB) into the fork server's image, which every run copies.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from . import linux

if TYPE_CHECKING:
    from .native import Native
    from .seccomp import Filter


class Arming:
    __slots__ = (
        "base_path",
        "cap_data",
        "cap_hdr",
        "cap_last",
        "default_env",
        "default_env_spec",
        "filter",
        "gid",
        "landlock_abi",
        "native",
        "net_filter",
        "uid",
        "userns",
        "workdir",
    )

    def __init__(
        self,
        cfg: dict[str, Any],
        filter: Filter | None,
        native: Native | None,
        landlock_abi: int,
        base_path: list[str],
        net_filter: Filter | None = None,
    ) -> None:
        """From the fork server's configuration (``workdir``, ``uid``, ``gid``, ``userns``,
        ``default_env``) and what it built at start."""
        #: The program's working directory (the run's tmpfs).
        self.workdir: str = cfg["workdir"]
        #: The ids the program runs as (a slot's own: :meth:`for_slot`).
        self.uid: int = cfg["uid"]
        self.gid: int = cfg["gid"]
        #: Whether the fork server runs in a user namespace (Assay started without root).
        self.userns: bool = cfg["userns"]
        #: The environment of most runs, set once in the slot's init.
        self.default_env: dict[str, str] = cfg["default_env"]
        #: The same as the supervisor puts it in a spec: the count, and each NAME=value
        #: NUL-terminated (see program.program_head).
        self.default_env_spec = (
            str(len(self.default_env)).encode(),
            b"".join(
                f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0"
                for k, v in self.default_env.items()
            ),
        )
        #: The seccomp filter, compiled once in the fork server (None: opted out).
        self.filter = filter
        #: launcher.c's set-up steps as a library (None: the Python steps are used).
        self.native = native
        #: Landlock ABI of this kernel (0: none, or opted out).
        self.landlock_abi = landlock_abi
        #: Highest capability number of this kernel (for emptying the bounding set).
        self.cap_last = _cap_last()
        #: capset() arguments that clear every capability set.
        self.cap_hdr = linux.CapHeader(linux.CAP_VERSION_3, 0)
        self.cap_data = (linux.CapData * 2)()
        #: ``sys.path`` of a Python program after its own directory (the fork server's path).
        self.base_path = base_path
        #: The filter of runs with loopback networking (IP sockets allowed), if any.
        self.net_filter = net_filter

    def with_filter(self, filter: Filter | None) -> Arming:
        """The same arming with another seccomp filter (loopback runs' own)."""
        copy = self.for_slot(self.uid, self.gid)
        copy.filter = filter
        return copy

    def for_slot(self, uid: int, gid: int) -> Arming:
        """The same arming for a slot whose programs run as ``uid``/``gid``."""
        copy = object.__new__(Arming)
        for name in Arming.__slots__:
            setattr(copy, name, getattr(self, name))
        copy.uid, copy.gid = uid, gid
        return copy

    def clear_capabilities(self) -> int:
        """capset() with every set empty (a user-namespace owner keeps its capabilities
        through setresuid); returns capset's result."""
        return int(linux.libc.capset(ctypes.byref(self.cap_hdr), self.cap_data))


#: Used when the kernel does not say (``/proc/sys/kernel/cap_last_cap``).
CAP_LAST = 63


def _cap_last() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return CAP_LAST
