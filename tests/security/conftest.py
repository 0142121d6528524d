"""Host-side probes shared by the exploit regression tests.

Each test in this directory attacks the sandbox for real and then looks at the *host* to
decide whether the attack worked. The helpers here are those host views: which processes of
the sandbox uid exist, and whether any process of a given run is still alive.

A run's processes are recognised by a tag: the program names itself (``prctl(PR_SET_NAME)``,
the ``comm`` the host sees in ``/proc/<pid>/comm``) with a tag unique to the test, and every
process it forks inherits that name. Namespace inode numbers would not do: the kernel reuses
them as soon as a namespace is freed, so the next run may get the very same number.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from assay import Runner, Sandbox, defaults
from assay.sandbox._zygote import ZYGOTE_MARK
from assay.sandbox.config import is_sandbox_uid

SANDBOX_UID = defaults.SANDBOX_UID

#: Fork servers are recognised by their command line: this Assay's, and an older one's (a
#: fork server of another checkout on the same host is someone else's pool).
_ZYGOTE_MARKS = (ZYGOTE_MARK, "from _inside import zygote")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def host_processes() -> dict[int, tuple[int, int]]:
    """``pid -> (uid, ppid)`` of every process on the host, as ``ps -eo uid,pid,ppid`` sees it."""
    out = subprocess.run(
        ["ps", "-eo", "uid=,pid=,ppid="], capture_output=True, text=True, check=True
    ).stdout
    procs: dict[int, tuple[int, int]] = {}
    for line in out.splitlines():
        uid, pid, ppid = (int(x) for x in line.split())
        procs[pid] = (uid, ppid)
    return procs


def sandbox_uid_processes(own_zygote: int | None) -> list[int]:
    """Host processes of the sandbox uid, except those under *another* pool's fork server.

    Other pools (the session-wide ``runner`` fixture, parallel test workers) legitimately keep
    armed, idle program processes running as uid 65534 under their own fork server; they are
    left out. Everything else of that uid is listed: anything under ``own_zygote`` and anything
    re-parented away from every fork server.
    """
    procs = host_processes()
    marked = {pid for pid in procs if any(m in _cmdline(pid) for m in _ZYGOTE_MARKS)}
    # A fork server is a root process carrying the mark whose parent does not: its forks
    # (slot inits, Python programs) carry the same command line.
    foreign = {
        pid
        for pid in marked
        if pid != own_zygote and procs[pid][0] == 0 and procs[pid][1] not in marked
    }
    # The gVisor tier's sandbox kernels run as nobody (65534) under a root `runsc run`.
    foreign |= {pid for pid, (uid, _pp) in procs.items() if uid == 0 and _is_runsc(pid)}
    found = []
    for pid, (uid, _ppid) in procs.items():
        if not is_sandbox_uid(uid) or (_GVISOR and (_is_runsc(pid) or _is_zombie(pid))):
            # (under gVisor: a Sentry or one of its host stubs, still exiting or dead and not
            # yet reaped after its sandbox was torn down; gVisor's machinery, never a
            # program, which the host cannot see. Not on the default tier, where a program
            # could exec runsc itself, and where an unreaped program is a finding.)
            continue
        cur, under_foreign = pid, False
        for _ in range(64):  # walk up to the host's init
            parent = procs.get(cur, (0, 0))[1]
            if parent in foreign:
                under_foreign = True
                break
            if parent <= 1:
                break
            cur = parent
        if not under_foreign:
            found.append(pid)
    return found


_RUNSC = os.path.realpath(shutil.which("runsc") or "/usr/bin/runsc")
_GVISOR = os.environ.get("ASSAY_ISOLATION") == "gvisor"


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _is_runsc(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/exe") == _RUNSC
    except OSError:
        return False


def _under(pid: int, ancestor: int | None) -> bool:
    """Whether ``ancestor`` is among ``pid``'s ancestors (now)."""
    cur = pid
    for _ in range(64):
        try:
            with open(f"/proc/{cur}/stat") as fh:
                cur = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if cur == ancestor:
            return True
        if cur <= 1:
            return False
    return False


def new_tag() -> str:
    """A process name unique to one test run (``comm`` holds at most 15 characters)."""
    return f"asy-{uuid.uuid4().hex[:11]}"


def tagged(code: str, tag: str) -> str:
    """``code`` preceded by a line naming the process ``tag`` (inherited by its forks)."""
    return (
        f"import ctypes as _c; _c.CDLL(None).prctl(15, {tag.encode()!r}, 0, 0, 0); del _c\n" + code
    )


def processes_named(tag: str) -> list[int]:
    """Host pids whose ``comm`` is ``tag``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as fh:
                if fh.read().strip() == tag:
                    found.append(int(entry))
        except OSError:
            continue
    return found


def leftovers(runner: Runner, tag: str) -> list[str]:
    """Processes a finished run left on the host; ``[]`` when the run is entirely gone.

    Any process carrying the run's tag counts, and so does any process of the sandbox uid of
    this pool beyond its idle, armed program processes (one per idle slot): with
    ``pool_size=0`` that is every process of uid 65534.
    """
    sandbox = runner.sandbox
    tagged_pids = processes_named(tag)
    found = [f"pid {pid} of the run is still alive" for pid in tagged_pids]
    others = [pid for pid in sandbox_uid_processes(sandbox.zygote_pid) if pid not in tagged_pids]
    orphans = [pid for pid in others if not _under(pid, sandbox.zygote_pid)]
    if orphans:
        # Not under this pool's fork server: an armed process of another pool (a parallel
        # test worker) whose fork server was just killed is briefly re-parented like this
        # while its namespace dies. One of this run would carry the tag or stay; recheck once.
        time.sleep(0.3)
        others = [pid for pid in others if pid not in orphans or os.path.exists(f"/proc/{pid}")]
    if len(others) > sandbox.idle_slots:
        found += [f"pid {pid} runs as a sandbox uid: {_cmdline(pid)[:80]!r}" for pid in others]
    return found


class HostView:
    """The host-side probes, handed to tests as the ``host`` fixture."""

    processes = staticmethod(host_processes)
    sandbox_uid_processes = staticmethod(sandbox_uid_processes)
    new_tag = staticmethod(new_tag)
    tagged = staticmethod(tagged)
    processes_named = staticmethod(processes_named)
    leftovers = staticmethod(leftovers)


@pytest.fixture
def host() -> HostView:
    return HostView()


@pytest.fixture(scope="session")
def no_idle_runner() -> Iterator[Runner]:
    """A private pool that keeps no idle slot: once a run returns it owns no process at all,
    so any process of the sandbox uid is a survivor.

    Session-scoped, like the shared ``runner``: one fork server for the whole session.
    """
    with Runner(Sandbox(pool_size=0)) as runner:
        yield runner


@pytest.fixture(scope="session")
def one_slot_runner() -> Iterator[Runner]:
    """A private pool of exactly one slot: consecutive runs reuse the same namespaces (the
    production case), so anything a run leaves behind would meet the next program."""
    with Runner(Sandbox(pool_size=1)) as runner:
        yield runner


@pytest.fixture(params=["no_idle_runner", "one_slot_runner"], ids=["no-idle-slot", "reused-slot"])
def pool_runner(request: pytest.FixtureRequest) -> Runner:
    """Each of the two private pools above, in turn."""
    runner: Runner = request.getfixturevalue(request.param)
    return runner


#: Attacks in a language whose toolchain a task image may lack: in image mode
#: (``$ASSAY_IMAGE_ROOT``) they apply only if the image has it.
_IMAGE_TOOLCHAINS = {"test_go_": "usr/bin/go", "test_java_": "usr/bin/javac"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = os.environ.get("ASSAY_IMAGE_ROOT")
    if not root:
        return
    for item in items:
        for prefix, tool in _IMAGE_TOOLCHAINS.items():
            if item.path.name.startswith(prefix) and not os.path.lexists(os.path.join(root, tool)):
                item.add_marker(pytest.mark.skip(reason=f"the image has no /{tool}"))


@pytest.fixture(scope="session")
def gvisor() -> bool:
    """Whether this run of the suite attacks the hardened tier (``ASSAY_ISOLATION=gvisor``):
    the program's system calls are served by gVisor's kernel, so a few mechanisms differ
    while the claim holds (each test that allows for it says how)."""
    return os.environ.get("ASSAY_ISOLATION") == "gvisor"


@pytest.fixture
def session_of(runner: Runner, tasks: dict[str, Any]) -> Iterator[object]:
    """Sessions on the module's ``tasks`` (kind -> AgentTask), closed after the test."""
    from assay.sessions import Session

    opened: list[Session] = []

    def _open(kind: str) -> Session:
        s = Session.for_task(runner, tasks[kind])
        opened.append(s)
        return s

    yield _open
    for s in opened:
        s.close()
