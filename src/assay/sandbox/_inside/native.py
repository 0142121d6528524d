"""The program process's set-up steps, and the slot init's per-run steps, in C (launcher.c
built as a shared library).

A Python program process is a fork of the slot's init: every page either of them touches
while they share it is copied, so forking, arming and taking the request in one C call
(``fork_program``), and the init's wait for the run (``slot_run``), cost a fraction of the
same steps written in Python. Loaded in the fork server, before pivot_root, if Assay could
build the library.
"""

from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .landlock import Plan


class Native:
    def __init__(self, library_fd: int, workdir: str, userns: bool) -> None:
        # Loaded from a memfd copy of the open file: the memory map names ``/memfd:libassay``,
        # not where Assay keeps the library on the host. ``library_fd`` is closed.
        copy = os.memfd_create("libassay", os.MFD_CLOEXEC)
        try:
            size = os.fstat(library_fd).st_size
            while os.sendfile(copy, library_fd, None, size) > 0:
                pass
            lib = ctypes.CDLL(f"/proc/self/fd/{copy}", use_errno=True)
        finally:
            os.close(copy)
            os.close(library_fd)
        i, P = ctypes.c_int, ctypes.POINTER  # the C prototypes, compactly
        sz, s = ctypes.c_size_t, ctypes.c_char_p
        self._arm = _function(lib, "assay_arm", s, i, i, i, P(i), i, i, s, sz, i)
        self._take = _function(lib, "assay_take", i, i, P(ctypes.c_void_p), P(sz))
        self._slot_run = _function(lib, "assay_slot_run", i, i, P(i), i, i, P(i), i, i, i, s, sz)
        strings, ull = P(ctypes.c_char_p), P(ctypes.c_ulonglong)
        self._set_reset = _function(
            lib, "assay_set_reset", s, s, i, strings, strings, P(i), P(i), i, i, s, sz, i,
            strings, ull,
        )  # fmt: skip
        self._reset_slot = _function(lib, "assay_reset_slot", i)
        self._background_idle = _function(lib, "assay_background_idle")
        self._foreground = _function(lib, "assay_foreground")
        self._run_idle = _function(lib, "assay_run_idle", i)
        self._ruleset = _function(lib, "assay_ruleset")
        self._set_prefault = _function(lib, "assay_set_prefault", P(ctypes.c_ulong), i)
        self._report_pages = _function(lib, "assay_report_pages", i)
        self._reset_args: tuple[Any, ...] = ()
        self._reset_steps: list[str] = []
        self._pidfd = ctypes.c_int(-1)
        self._cg = (ctypes.c_int * 16)()
        #: The last run's exit record (see ``slot_run``).
        self.record = ctypes.create_string_buffer(256)
        # Forking the Python program process in C, with the interpreter's own fork hooks
        # (what os.fork calls): only where this interpreter exports them to ctypes.
        try:
            api = ctypes.pythonapi
            hooks = [
                ctypes.cast(getattr(api, name), ctypes.c_void_p)
                for name in ("PyOS_BeforeFork", "PyOS_AfterFork_Parent", "PyOS_AfterFork_Child")
            ]
            lib.assay_set_fork_hooks.restype = None
            lib.assay_set_fork_hooks.argtypes = [ctypes.c_void_p] * 3
            lib.assay_set_fork_hooks(*hooks)
            # PYFUNCTYPE: called with the GIL held (the hooks need it), as os.fork is.
            proto = ctypes.PYFUNCTYPE(
                i, P(i), s, s, sz, s, sz, P(sz), P(ctypes.c_void_p), P(i), s, sz, P(i)
            )
            self._fork: Any = proto(("assay_fork_program", lib))
            ip = P(i)
            serve = ctypes.PYFUNCTYPE(
                i, ip, P(s), i, ip, s, s, s, sz, P(sz), P(ctypes.c_void_p), ip, s, sz, ip,
                ip, ip, ip, ip, ip,
            )  # fmt: skip
            self._serve: Any = serve(("assay_serve", lib))
        except (AttributeError, OSError):
            self._fork = self._serve = None
        self._serve_ints = (ctypes.c_int * 5)()
        self._orders: Any = None
        self._taken, self._nfds, self._idle_out = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self._pid_out, self._collect_out = ctypes.c_int(), ctypes.c_int()
        self._served_fds = (ctypes.c_int * 32)()
        self._ints = (ctypes.c_int * 48)()
        self._spec_buf = ctypes.create_string_buffer(8192)  # a spec is ~1 KB; more: malloc'd
        self._spec_big = ctypes.c_void_p()
        self._workdir = os.fsencode(workdir)
        self._userns = 1 if userns else 0
        # Built now, in the fork server, so a run allocates as little as possible.
        self._spec = ctypes.c_void_p()
        self._spec_len = ctypes.c_size_t()
        self._run_result = (ctypes.c_int * 2)()  # assay_slot_run's result, and errno
        # The arguments assay_fork_program and assay_serve end with: the spec's buffers, the
        # init's pidfd of its program process, the exit record and the run's result.
        self._program_out = (
            self._spec_buf,
            len(self._spec_buf),
            ctypes.byref(self._spec_len),
            ctypes.byref(self._spec_big),
            ctypes.byref(self._pidfd),
            self.record,
            len(self.record),
            self._run_result,
        )

    def arm(
        self, uid: int, gid: int, cg_fds: list[int], ruleset: int, req: int, bpf: bytes | None
    ) -> bool:
        """Join the cgroups, become ``uid``/``gid`` with no privilege, Landlock, seccomp;
        False if it failed (reported to the supervisor on ``req``)."""
        userns = self._userns
        cg = (ctypes.c_int * max(1, len(cg_fds)))(*cg_fds)
        res = self._arm(
            self._workdir,
            uid,
            gid,
            userns,
            cg,
            len(cg_fds),
            ruleset,
            bpf,
            len(bpf) if bpf is not None else 0,
            req,
        )
        return bool(res == 0)

    def take(self, req: int, collect_w: int) -> bytes:
        """Take the request and set the run up; returns the spec. The process ends if the
        supervisor went away (status 0) or on a failure (reported; status 126)."""
        res = self._take(req, collect_w, ctypes.byref(self._spec), ctypes.byref(self._spec_len))
        if res == 1:
            os._exit(0)
        if res != 0 or self._spec.value is None:
            os._exit(126)
        return ctypes.string_at(self._spec.value, self._spec_len.value)

    def slot_run(
        self,
        status: int,
        child: int,
        program_ends: tuple[int, int, list[int]],
        req_sup: int,
        collect_r: int,
    ) -> int:
        """The slot's init's steps after forking the program process ``child`` (launcher.c's
        ``assay_slot_run``): hand it over, wait for it, end the run. ``status``: the socket
        to the supervisor; ``program_ends``: the program's request socket, the collect
        pipe's write end and the cgroup fds, all closed here, as is ``req_sup``. Returns 0
        (the record is sent, the slot reset: see :meth:`reset`), 1 (an order waits on the
        status socket: call again once it is handled), 3 (files to collect: the record is
        in :attr:`record`; the slot is not reset yet). Raises OSError on a failure."""
        req_prog, collect_w, cg_fds = program_ends
        if self._pidfd.value < 0:
            for i, fd in enumerate(cg_fds[:16]):
                self._cg[i] = fd
        res = self._slot_run(
            status,
            child,
            ctypes.byref(self._pidfd),
            req_prog,
            collect_w,
            self._cg,
            len(cg_fds),
            req_sup,
            collect_r,
            self.record,
            len(self.record),
        )
        return _run_result(res, ctypes.get_errno())

    def set_reset(
        self,
        stage: str,
        options: str,
        places: list[tuple[str, str, int, bool]],
        ids: tuple[int, int],
        plan: Plan,
    ) -> None:
        """Set, once per slot, what :meth:`reset` does (launcher.c's ``assay_reset``): mount
        a tmpfs with ``options`` on ``stage``, make each place ``(name, target, mode, owned
        by ids)`` in it and bind it over its target, detach ``stage``, create the Landlock
        ruleset of ``plan``. The slot's init calls it between runs, in C (``slot_run``)."""

        def strings(values: list[str]) -> Any:
            return (ctypes.c_char_p * max(1, len(values)))(*[os.fsencode(v) for v in values])

        def ints(values: list[int]) -> Any:
            return (ctypes.c_int * max(1, len(values)))(*values)

        attr, rules = plan
        paths = [path for path, _d, _f in rules]
        access = [a for _p, on_dir, on_file in rules for a in (on_dir, on_file)]
        # Kept here: C holds pointers into them.
        self._reset_args = (
            os.fsencode(stage),
            os.fsencode(options),
            len(places),
            strings([name for name, _t, _m, _o in places]),
            strings([target for _n, target, _m, _o in places]),
            ints([mode for _n, _t, mode, _o in places]),
            ints([int(own) for _n, _t, _m, own in places]),
            ids[0],
            ids[1],
            attr or None,
            len(attr),
            len(rules),
            strings(paths),
            (ctypes.c_ulonglong * max(1, len(access)))(*access),
        )
        self._set_reset(*self._reset_args)
        self._reset_steps = ["mount tmpfs", "make a place", "bind a place", "detach the stage"]
        self._reset_steps += ["landlock_create_ruleset", *(f"landlock_add_rule {p}" for p in paths)]

    def reset(self, drop: bool) -> None:
        """A fresh tmpfs and ruleset for the slot (the last tmpfs detached first if
        ``drop``); raises OSError naming the step that failed."""
        res = int(self._reset_slot(1 if drop else 0))
        if res < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{self._reset_steps[-res - 11]}: {os.strerror(err)}")

    def background_idle(self) -> bool:
        """Have the slot's background work (its reset after a run, the arming of the next
        program process) run at idle priority from now on, where this process can come
        back from it (launcher.c's ``assay_background_idle``); whether it does. Raises
        OSError if the trial could not run."""
        res = int(self._background_idle())
        if res < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"idle-priority trial: {os.strerror(err)}")
        return res == 1

    def run_idle(self, idle: bool) -> None:
        """Whether the background work after the coming runs is done at idle priority (the
        supervisor's choice, in each arm order: see ``Sandbox._release``)."""
        self._run_idle(1 if idle else 0)

    def set_prefault(self, lines: bytes) -> None:
        """Have each program process :meth:`fork_program` forks fault in, before it says
        "armed", the pages of ``lines`` ("address bytes", as :meth:`report_pages` writes
        them). Raises ValueError on a malformed line or too many."""
        flat = [int(v) for line in lines.split(b"\n") if line for v in line.split(b" ", 1)]
        if len(flat) % 2 or self._set_prefault((ctypes.c_ulong * len(flat))(*flat), len(flat) // 2):
            raise ValueError(f"{len(flat) // 2} prefault ranges: malformed or too many")

    def report_pages(self, fd: int) -> None:
        """Write to ``fd`` the pages this process wrote since its fork (launcher.c's
        ``assay_report_pages``): what :meth:`set_prefault` takes."""
        if self._report_pages(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"report pages: {os.strerror(err)}")

    def foreground(self) -> None:
        """Back to normal priority, before forking a program process outside the C steps
        (which do it at the hand-over)."""
        if self._foreground() != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"back to normal priority: {os.strerror(err)}")

    @property
    def ruleset(self) -> int:
        """The Landlock ruleset of the slot's current tmpfs (-1: none)."""
        return int(self._ruleset())

    @property
    def can_fork(self) -> bool:
        """Whether :meth:`fork_program` is available (else os.fork and :meth:`arm`)."""
        return self._fork is not None

    def fork_program(
        self,
        init_ends: tuple[int, int, int],
        arming: tuple[int, int, int, bytes | None],
        cg_fds: list[int],
        req: int,
        collect_w: int,
    ) -> int:
        """Fork the run's program process, which arms itself and takes its request in C
        before it returns here (launcher.c's ``assay_fork_program``); like os.fork, returns
        the child's pid in the slot's init and 0 in the child, whose spec is then
        :meth:`spec`. In the init the call first does what :meth:`slot_run` does (hand the
        process over, wait for it, end the run), all of it in C; its result is then
        :meth:`first_result`. ``init_ends``: the init's status socket, the supervisor's
        end of the request socket and the collect pipe's read end (closed in the child; the
        last two also in the init, as are ``req``, ``collect_w`` and the cgroup fds);
        ``arming``: uid, gid, Landlock ruleset fd, seccomp program. Raises OSError if the
        fork failed (in the init)."""
        assert self._fork is not None
        uid, gid, ruleset, bpf = arming
        ints = self._ints
        values = (*init_ends, uid, gid, self._userns, ruleset, req, collect_w, len(cg_fds))
        for i, v in enumerate(values):
            ints[i] = v
        for i, fd in enumerate(cg_fds[:32]):
            ints[10 + i] = fd
        res = self._fork(
            ints,
            self._workdir,
            bpf,
            len(bpf) if bpf is not None else 0,
            *self._program_out,
        )
        if res < 0:
            raise OSError(-res, os.strerror(-res))
        return int(res)

    def serve(
        self,
        status: int,
        ids: tuple[int, int],
        bpf: bytes | None,
        orders: tuple[bytes, bytes],
        max_runs: int,
    ) -> tuple[int, int]:
        """The slot's init's loop over plain arm orders (``orders``: this slot's kind with
        idle priority not allowed, then allowed), in C (launcher.c's ``assay_serve``):
        returns what it returned (0 in the program process; in the init 1: the next order
        is slot.py's; 2: an order with more cgroup fds than C takes, see :meth:`served`;
        3: a run's wait came back unfinished, see :meth:`served` and
        :meth:`first_result`; 4: ``max_runs`` orders taken) and how many orders it took.
        Raises OSError if a step before a fork failed."""
        if self._orders is None or self._orders[0] != orders[0]:
            self._orders = (ctypes.c_char_p * 2)(*orders)
        ints = self._serve_ints
        ints[0], ints[1], ints[2] = status, ids[0], ids[1]
        ints[3], ints[4] = self._userns, len(bpf) if bpf is not None else 0
        res = self._serve(
            ints,
            self._orders,
            max_runs,
            ctypes.byref(self._taken),
            self._workdir,
            bpf,
            *self._program_out,
            self._served_fds,
            ctypes.byref(self._nfds),
            ctypes.byref(self._idle_out),
            ctypes.byref(self._pid_out),
            ctypes.byref(self._collect_out),
        )
        if res < 0:
            raise OSError(-res, f"arm: {os.strerror(-res)}")
        return int(res), self._taken.value

    def served(self) -> tuple[list[int], bool, int, int]:
        """After :meth:`serve` returned 2 or 3: the order's cgroup fds and idle flag (2), the
        run's program pid and collect pipe's read end (3)."""
        fds = list(self._served_fds[: self._nfds.value])
        return fds, bool(self._idle_out.value), self._pid_out.value, self._collect_out.value

    def first_result(self) -> int:
        """In the slot's init, after :meth:`fork_program`: what its run's wait returned (as
        :meth:`slot_run` returns it; raises as it does)."""
        return _run_result(self._run_result[0], self._run_result[1])

    def spec(self) -> bytes:
        """In the program process forked by :meth:`fork_program`: its request's spec."""
        n = self._spec_len.value
        if self._spec_big.value:
            return ctypes.string_at(self._spec_big.value, n)
        return self._spec_buf.raw[:n]


def _run_result(res: int, err: int) -> int:
    """assay_slot_run's result (0, 1 or 3), or OSError for its failures (-1, -2)."""
    if res < 0:
        raise OSError(err, "hand-over" if res == -1 else "slot wait")
    return int(res)


def _function(lib: ctypes.CDLL, name: str, *argtypes: Any) -> Any:
    """``lib``'s function ``name``, returning an int, with its argument types declared."""
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    fn.argtypes = list(argtypes)
    return fn
