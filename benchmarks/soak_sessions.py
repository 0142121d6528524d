"""The agent-session part of ``soak.py``: sessions opened, stepped, closed and abandoned through
the HTTP API while the judging load runs, and the probes that show nothing of them is left.

Each session starts a background process named :data:`TAG` (a copy of ``sleep 600``) that
would outlive the session if teardown leaked; then a few steps (arithmetic checked, a file
written and read back, sometimes a step past its timeout, sometimes a memory bomb); then it
is closed (DELETE) or abandoned (never touched again: the service reaps it at its idle TTL).

What is measured on the host, before the load and after everything has ended:

* processes: :data:`TAG` processes alive, and processes under the service that are not
  idle processes of the warm sandbox pool (both must be 0 at the end);
* cgroups: run cgroups of the service holding a process that is not an idle pool process
  (must be 0 at the end);
* mounts: lines of the service's and the host's mount tables (unchanged).
"""

from __future__ import annotations

import collections
import glob
import itertools
import os
import random
import threading
import time
from pathlib import Path

import httpx

#: The comm of the background process every session starts (15 characters at most).
TAG = "soak_sess_bg"
LIMITS = {"cpu_s": 30, "memory_mb": 128, "processes": 32, "disk_mb": 16}


class SessionLoad:
    """Client threads living agent episodes through ``/v1/sessions`` until told to stop."""

    def __init__(self, base: str, clients: int, idle_ttl_s: float, seed: int = 0) -> None:
        self.base = base
        self.idle_ttl_s = idle_ttl_s
        self.stop = threading.Event()
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._seeds = itertools.count(seed)
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join()

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.counts[what] += n

    def _fail(self, what: str) -> None:
        with self._lock:
            self.failures.append(what[:300])

    def _run(self) -> None:
        rng = random.Random(next(self._seeds))
        with httpx.Client(base_url=self.base, timeout=120) as client:
            while not self.stop.is_set():
                try:
                    self._episode(client, rng)
                except httpx.HTTPError as exc:
                    self._fail(repr(exc))

    def _step(self, client: httpx.Client, sid: str, command: str, **kw: object) -> dict | None:
        r = client.post(f"/v1/sessions/{sid}/exec", json={"command": command, **kw})
        if r.status_code == 410:  # ended under the step: why is in the body
            reason = r.json().get("reason")
            self._count(f"ended_early_{reason}")
            if reason == "idle_ttl":  # steps follow each other at once: never idle
                self._fail("session reaped at its idle TTL while its client was stepping")
            return None
        if r.status_code != 200:
            self._fail(f"exec HTTP {r.status_code}: {r.text}")
            return None
        self._count("steps")
        body: dict = r.json()
        return body

    def _episode(self, client: httpx.Client, rng: random.Random) -> None:
        r = client.post(
            "/v1/sessions", json={"limits": LIMITS, "ttl_s": 300, "idle_ttl_s": self.idle_ttl_s}
        )
        if r.status_code == 429:
            self._count("refused")
            time.sleep(0.5)
            return
        if r.status_code != 200:
            self._fail(f"create HTTP {r.status_code}: {r.text}")
            return
        sid = r.json()["id"]
        self._count("opened")
        bg = f"cp /bin/sleep /tmp/{TAG} && (/tmp/{TAG} 600 >/dev/null 2>&1 &); echo started"
        out = self._step(client, sid, bg)
        if out is None:
            return
        if out["stdout"] != "started\n":
            self._fail(f"background step: {out}")
        for i in range(rng.randint(1, 4)):
            out = self._step(client, sid, f"echo $(({i} * {i} + 1)) > n{i}; cat n{i}")
            if out is None:
                return
            if out["stdout"] != f"{i * i + 1}\n":
                self._fail(f"arithmetic step {i}: {out}")
        if rng.random() < 0.2:
            out = self._step(client, sid, "echo partial; sleep 5", timeout_s=0.5)
            if out is None:
                return
            if not (out["timed_out"] and out["stdout"] == "partial\n"):
                self._fail(f"timed-out step: {out}")
            self._count("steps_timed_out")
        if rng.random() < 0.1:
            bomb = "python3 -c 'x = bytearray(1 << 30)' ; echo survived $?"
            out = self._step(client, sid, bomb)
            self._count("memory_bombs")
            if out is not None and out["stdout"] == "survived 137\n":
                self._count("memory_bombs_killed")  # by the session's cgroup; session lives on
        if rng.random() < 0.5:
            d = client.delete(f"/v1/sessions/{sid}")
            if d.status_code == 204:
                self._count("closed")
            elif d.status_code == 410:
                self._count("closed_already_ended")
            else:
                self._fail(f"close HTTP {d.status_code}: {d.text}")
        else:
            self._count("abandoned")  # the reaper ends it at its idle TTL


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def is_pool(pid: int) -> bool:
    """A process of the warm sandbox pool, waiting for a run: a fork server, or an armed
    launcher (``/.assay-launch``, before it execs a run's program). Their number follows the
    pool's size, which grows with the peak concurrency; anything else is a run's."""
    cmd = _cmdline(pid)
    return cmd.startswith("/.assay-launch ") or "# assay fork server" in cmd


def tagged_processes() -> int:
    n = 0
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            if Path(comm).read_text().strip() == TAG:
                n += 1
        except OSError:
            continue
    return n


def descendants(pid: int) -> list[int]:
    """Processes under ``pid`` on the host (sandboxed ones included: their host pids)."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = Path(stat).read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        children[int(fields[1])].append(int(stat.split("/")[2]))
    seen, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            seen.append(child)
            todo.append(child)
    return seen


def _cgroup_mounts() -> list[str]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        if post.split()[0] in ("cgroup", "cgroup2"):
            out.append(pre.split()[4])
    return out


def run_cgroups(pid: int) -> tuple[int, int]:
    """``(run cgroups, those holding a process that is not an idle pool process)`` of the
    service ``pid``: its sandbox's cgroup sessions are named ``s<pid>-...`` under an ``assay``
    directory of a cgroup mount. This finds a run's process even if it left the service's
    process tree."""
    dirs, busy = 0, 0
    for mount in _cgroup_mounts():
        for depth in ("", "*/", "*/*/"):
            for session in glob.glob(f"{mount}/{depth}assay/s{pid}-*"):
                for root, _sub, files in os.walk(session):
                    if root == session or "cgroup.procs" not in files:
                        continue
                    dirs += 1
                    try:
                        procs = Path(root, "cgroup.procs").read_text().split()
                    except OSError:
                        continue
                    if any(not is_pool(int(p)) for p in procs):
                        busy += 1
    return dirs, busy


def host_state(pid: int) -> dict[str, object]:
    """What the host holds of the service's runs now (see the module's docstring)."""
    procs = descendants(pid)
    others = [p for p in procs if not is_pool(p)]
    dirs, busy = run_cgroups(pid)
    return {
        "tagged_processes": tagged_processes(),
        "pool_processes": len(procs) - len(others),
        "other_processes": len(others),
        "other_samples": [_cmdline(p)[:80] for p in others[:3]],
        "run_cgroups": dirs,
        "run_cgroups_with_run_processes": busy,
        "service_mounts": Path(f"/proc/{pid}/mountinfo").read_text().count("\n"),
        "host_mounts": Path("/proc/self/mountinfo").read_text().count("\n"),
    }
