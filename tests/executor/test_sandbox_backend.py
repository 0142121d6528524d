"""The executor on the real sandbox: judging, plain runs, and surviving a killed fork server."""

from __future__ import annotations

import collections
import os
import signal
import threading
import time

import pytest

from assay import Limits, Problem, Runner, Submission, TestCase
from assay.executor import LocalExecutor, RunJob
from assay.sandbox import open_sandbox
from assay.sandbox.config import is_sandbox_uid
from assay.scheduler import RuntimeEstimator
from assay.telemetry import MemoryWriter

ECHO = Problem("echo", [TestCase("stdio", "3\n", "3"), TestCase("stdio", "5\n", "5")])


def executor(runner: Runner, **kw: object) -> LocalExecutor:
    return LocalExecutor(
        runner,
        slots=2,
        records=MemoryWriter(),
        estimator=RuntimeEstimator(),
        **kw,  # type: ignore[arg-type]
    )


def test_judges_and_runs_in_the_sandbox(runner: Runner) -> None:
    with executor(runner) as ex:
        results = ex.run(
            [
                Submission(ECHO, "print(input())"),
                Submission(ECHO, "print(4)"),
                RunJob("import sys; print(sys.stdin.read().upper())", stdin=b"hi"),
            ]
        )
    assert [r.verdict for r in results] == ["accepted", "wrong_answer", "ok"]
    assert [r.reward for r in results] == [1.0, 0.0, None]
    assert results[2].result is not None and results[2].result.stdout == b"HI\n"
    assert all(r.outcome == "done" and r.attempts == 1 for r in results)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _slot_inits_running_programs(zygote: int) -> list[int]:
    """The trusted init of every slot that is running a program: a child owned by nobody
    that has used CPU (armed program processes wait without any)."""
    tree = _children()
    found, stack = [], [zygote]
    while stack:
        pid = stack.pop()
        kids = tree.get(pid, [])
        stack += kids
        for kid in kids:
            try:
                if (
                    is_sandbox_uid(os.stat(f"/proc/{kid}").st_uid)
                    and os.stat(f"/proc/{pid}").st_uid == 0
                    and _cpu_ticks(kid) >= 3
                ):
                    found.append(pid)
            except OSError:
                pass
    return found


@pytest.mark.parametrize("target", ["fork-server", "slot-init"])
def test_killing_a_sandbox_process_mid_batch_loses_no_job(target: str) -> None:
    spin = (
        "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\nprint(input())"
    )
    jobs = [
        Submission(Problem(f"spin{i}", [TestCase("stdio", f"{i}\n", str(i))]), spin)
        for i in range(12)
    ]
    with Runner() as runner, executor(runner, cache=False, split=False) as ex:
        handle = ex.submit(jobs)
        killed: list[int] = []

        def kill_mid_batch() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not killed:
                zygote = runner.sandbox.zygote_pid
                if handle.finished >= 2 and zygote is not None:
                    inits = _slot_inits_running_programs(zygote)
                    if inits:
                        victims = [zygote] if target == "fork-server" else inits
                        for pid in victims:
                            os.kill(pid, signal.SIGKILL)
                        killed.extend(victims)
                time.sleep(0.005)

        killer = threading.Thread(target=kill_mid_batch)
        killer.start()
        results = handle.gather(120)
        killer.join()
    assert killed, "nothing was killed"
    assert len(results) == 12
    assert [r.verdict for r in results] == ["accepted"] * 12, [r.reason for r in results]
    if target == "slot-init":
        assert any(r.attempts > 1 for r in results), "the killed run should have been retried"


def test_deadline_on_real_runs(runner: Runner) -> None:
    sleepy = Problem("sleepy", [TestCase("stdio", "", "")], limits=Limits(time_s=1.0, wall_s=1.0))
    with executor(runner, cache=False, split=False) as ex:
        t0 = time.monotonic()
        results = ex.run(
            [Submission(sleepy, f"import time; time.sleep(0.8); # {i}") for i in range(6)],
            deadline_s=1.0,
        )
        assert time.monotonic() - t0 < 2.5
    outcomes = [r.outcome for r in results]
    assert outcomes.count("done") >= 2 and outcomes.count("deadline") >= 1


def _fd_kinds(leave_out: tuple[str, ...] = ()) -> collections.Counter[str]:
    """This process's descriptors by kind (a socket, a pipe...), but cgroups by directory:
    a cgroup's files are opened as they are first used (a reuse check opens three more), so
    the same cgroups hold more descriptors after a while; each cgroup counts once per
    hierarchy, whatever files of it are open. Directories whose path ends with one of
    ``leave_out`` are not counted."""
    kinds: collections.Counter[str] = collections.Counter()
    cgroup_dirs: set[str] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing (the listing's own, for one)
            continue
        if target.startswith("/sys/fs/cgroup/"):
            directory = os.path.dirname(target)
            if not any(directory.endswith(tail) for tail in leave_out):
                cgroup_dirs.add(directory)
        else:
            kinds[target.split(":")[0]] += 1
    for directory in cgroup_dirs:
        kinds["cgroup " + directory.split("/")[4]] += 1
    return kinds


def _settled_fd_kinds(sandbox: object, timeout_s: float = 20.0) -> collections.Counter[str]:
    """The descriptors once the pool's background work is over: the cgroup pool's thread
    waiting with nothing to do, its ready cgroups counted out (it fills them at its own
    pace, ~8 descriptors each, at most ``keep`` of them whatever the number of executors). Then the count must hold still for 0.3 s. A
    settle on stillness alone returned early on a loaded CI host (342 descriptors, then 348
    for the same pool); counting each cgroup file did too (313, then 319: two cgroups had
    been through a reuse check in between, 3 more files open each)."""
    pool = getattr(sandbox, "_cg_pool", None)
    deadline = time.monotonic() + timeout_s

    def quiet() -> bool:
        return pool is None or pool.settled()

    def count() -> collections.Counter[str]:
        if pool is None:
            return _fd_kinds()
        with pool._cv:
            # A ready cgroup's directory is alike in every hierarchy from the session on.
            ready = tuple("/" + "/".join(cg.path.split("/")[-2:]) for cg in pool._ready)
        return _fd_kinds(ready)

    last: collections.Counter[str] | None = None
    still = 0
    while time.monotonic() < deadline:
        if quiet():
            now = count()
            still = still + 1 if now == last else 0
            last = now
            if still >= 6:
                return +last
        time.sleep(0.05)
    return +count()  # never quiet: what is held now, for the caller's assertion to show


def test_executors_on_one_runner_top_its_pool_up_instead_of_growing_it() -> None:
    """Each executor warms the runner's pool; the tenth on one runner must not hold ten times
    the armed sandboxes (each a cgroup's descriptors and a socket: a server or a test run
    that made executors reached descriptor 1099 and ``select`` refused it)."""
    with Runner(open_sandbox(None, pool_size=4)) as runner:
        with executor(runner):
            pass
        once = runner.sandbox.idle_slots
        fds_once = _settled_fd_kinds(runner.sandbox)
        for _ in range(9):
            with executor(runner):
                pass
        assert runner.sandbox.idle_slots == once
        fds = _settled_fd_kinds(runner.sandbox)
        assert sum(fds.values()) <= sum(fds_once.values()) + 5, (fds - fds_once, fds_once)
