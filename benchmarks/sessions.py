"""Agent sessions (issue 15): what creating, stepping, forking and holding sessions costs.

Each number is printed with the baseline it is measured against in the same run, and the
script ends with one JSON line:

- ``create_p50_ms``: ``Session(runner)`` until the agent answers (warm pool), against a plain
  one-shot sandbox run of ``pass`` (``create_vs_plain_run``);
- ``exec_p50_ms``: ``exec("true")`` in a warm session, against ``bash -c true`` started on the
  host with no sandbox (``exec_vs_host_bash``);
- ``exec_on_executor_p50_ms``: the same step in a session made on an idle ``LocalExecutor``
  (the step waits for one of its slots, as the service's sessions do);
- ``fork_p50_ms``: ``fork()`` of a session holding a 10 MiB (incompressible) workspace;
- ``concurrent_sessions`` / ``memory_per_idle_session_mib``: idle sessions held open at once,
  and what each costs: the proportional set size (PSS) of all its processes, plus the host's
  ``MemAvailable`` drop per session (``memavail_per_idle_session_mib``, noisier: other work
  on the host moves it too); ``trusted_cpu_pct_idle``: the trusted process's CPU while they
  sit idle (each session's supervisor samples its cgroup);
- ``creates_20_s``: wall time of 20 creates started at once;
- ``episodes_per_s``: scripted 10-step episodes (create, write a file, 8 steps, close) with
  ``--workers`` episodes running at once (every core busy);
- ``verify_p50_ms`` (issue 16): ``Session.verify()`` on a CodeT repair task (HumanEval/0's
  first failing CodeGen sample, 7 hidden tests; a small built-in task without the corpora),
  against a plain one-shot sandbox run of ``pass`` (``verify_vs_plain_run``);
  ``verify_episodes_per_s``: the same 10-step episodes on that task with a ``verify()``
  after every other step (5 verifications per episode).
- ``remote_*_p50_ms`` (issue 28): create, ``exec("true")``, ``fork()`` (small workspace)
  and ``verify()`` through ``assay.client.SessionClient`` against an ``assay serve`` on
  127.0.0.1 (a subprocess), next to the same calls on an in-process ``Session`` on a
  ``LocalExecutor`` (``local_*_p50_ms``, as the service's own sessions run);
  ``remote_exec_overhead_ms`` is the difference of the exec p50s (target: within 2 ms).

Usage: ``.venv/bin/python benchmarks/sessions.py [--idle 500] [--episodes 40] [--workers 4]``
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from assay import Limits, LocalExecutor, Runner, Sandbox, Session, SessionLimits
from assay.tasks import AgentTask

IDLE_LIMITS = SessionLimits(cpu_s=60, memory_mb=64, processes=16, disk_mb=16)
STEPS = [
    "mkdir -p src && cd src",
    "printf 'def add(a, b):\\n    return a - b\\n' > calc.py",
    "cat calc.py",
    "python3 -c 'import calc; print(calc.add(2, 2))'",
    "sed -i 's/a - b/a + b/' calc.py",
    "python3 -c 'import calc; assert calc.add(2, 2) == 4; print(\"ok\")'",
    "ls -la; export DONE=1",
    "echo $DONE; cd /work && find . -type f | wc -l",
]


def p50(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(root: int) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = (int(x) for x in line.split())
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _mem_available_mib() -> float:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def bench_create_exec(runner: Runner, n: int) -> dict[str, float]:
    plain, create, exec_, host = [], [], [], []
    for _ in range(n):
        t = time.perf_counter()
        runner.run("pass", limits=Limits(time_s=2))
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        s = Session(runner, limits=IDLE_LIMITS)
        create.append(time.perf_counter() - t)
        s.close()
    with Session(runner, limits=IDLE_LIMITS) as s:
        s.exec("true")
        for _ in range(n * 2):
            t = time.perf_counter()
            s.exec("true")
            exec_.append(time.perf_counter() - t)
            t = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], check=True)
            host.append(time.perf_counter() - t)
    on_slot = []
    with (
        tempfile.TemporaryDirectory() as state,
        LocalExecutor(runner, state_dir=state) as ex,
        Session(ex, limits=IDLE_LIMITS) as s,
    ):
        s.exec("true")
        for _ in range(n * 2):
            t = time.perf_counter()
            s.exec("true")
            on_slot.append(time.perf_counter() - t)
    out = {
        "create_p50_ms": p50(create),
        "plain_run_p50_ms": p50(plain),
        "exec_p50_ms": p50(exec_),
        "exec_on_executor_p50_ms": p50(on_slot),
        "host_bash_p50_ms": p50(host),
    }
    out["create_vs_plain_run"] = out["create_p50_ms"] / out["plain_run_p50_ms"]
    out["exec_vs_host_bash"] = out["exec_p50_ms"] / out["host_bash_p50_ms"]
    return out


def bench_fork(runner: Runner, n: int) -> dict[str, float]:
    limits = SessionLimits(cpu_s=60, memory_mb=256, processes=16, disk_mb=64)
    times = []
    with Session(runner, limits=limits) as s:
        s.write_file("data.bin", os.urandom(10 << 20))
        for _ in range(n):
            t = time.perf_counter()
            child = s.fork()
            times.append(time.perf_counter() - t)
            assert child.exec("stat -c %s data.bin").stdout == b"10485760\n"
            child.close()
    return {"fork_p50_ms": p50(times)}


def bench_idle(runner: Runner, target: int) -> dict[str, float]:
    zygote = runner.sandbox.zygote_pid
    before = _mem_available_mib()
    sessions: list[Session] = []
    error = ""
    t0 = time.perf_counter()
    try:
        for i in range(target):
            sessions.append(Session(runner, limits=IDLE_LIMITS, ttl_s=3600, idle_ttl_s=3600))
            if (i + 1) % 50 == 0:
                print(
                    f"  {i + 1} idle sessions open ({time.perf_counter() - t0:.0f} s)", flush=True
                )
    except Exception as exc:  # report how far it got, and why it stopped
        error = f"{type(exc).__name__}: {exc}"[:300]
    opened = len(sessions)
    time.sleep(2.0)
    after = _mem_available_mib()
    cpu0, w0 = os.times(), time.perf_counter()
    time.sleep(3.0)
    cpu1, w1 = os.times(), time.perf_counter()
    trusted_cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (w1 - w0) * 100
    alive = sum(1 for s in sessions[:: max(1, opened // 20)] if s.exec("echo ok").stdout == b"ok\n")
    procs = [p for p in _descendants(zygote or 0)] if zygote else []
    pss_mib = sum(_pss_kib(p) for p in procs) / 1024
    idle_armed = runner.sandbox.idle_slots
    for s in sessions:
        s.close()
    out = {
        "concurrent_sessions": opened,
        "memory_per_idle_session_mib": (pss_mib / opened) if opened else 0.0,
        "memavail_per_idle_session_mib": ((before - after) / opened) if opened else 0.0,
        "trusted_cpu_pct_idle": trusted_cpu,
        "idle_sample_answering": alive,
        "idle_armed_slots_in_pss": idle_armed,
    }
    if error:
        print(f"  stopped opening sessions: {error}")
    return out


def bench_creates_20(runner: Runner) -> dict[str, float]:
    barrier = threading.Barrier(20)
    made: list[Session] = []

    def one() -> Session:
        barrier.wait()
        return Session(runner, limits=IDLE_LIMITS)

    with ThreadPoolExecutor(20) as pool:
        futures = [pool.submit(one) for _ in range(20)]
        t = time.perf_counter()
        made = [f.result() for f in futures]
        took = time.perf_counter() - t
    for s in made:
        s.close()
    return {"creates_20_s": took}


def bench_episodes(runner: Runner, episodes: int, workers: int) -> dict[str, float]:
    def episode(i: int) -> None:
        with Session(runner, limits=IDLE_LIMITS) as s:
            s.write_file("README", f"episode {i}\n")
            for cmd in STEPS:
                step = s.exec(cmd, timeout_s=30)
                assert not step.timed_out, (cmd, step)
            assert s.exec("cat src/calc.py").exit_code == 0

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(episode, range(workers)))  # warm
        t = time.perf_counter()
        list(pool.map(episode, range(episodes)))
        took = time.perf_counter() - t
    return {"episodes_per_s": episodes / took, "episode_workers": workers}


def _repair_task(runner: Runner) -> AgentTask:
    corpora = Path(os.environ.get("ASSAY_CORPORA", Path(__file__).parents[2] / "shared/corpora"))
    samples = corpora / "codet" / "humaneval-codegen16b-100-samples.jsonl"
    if samples.exists():
        from assay.tasks.codet import from_samples

        dataset = corpora / "humaneval" / "HumanEval.jsonl.gz"
        return next(from_samples(samples, dataset, runner, tasks={"HumanEval/0"}))
    tests = "from solution import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    return AgentTask(
        "calc",
        "fix add",
        {"solution.py": b"def add(a, b):\n    return a - b\n"},
        {"test_hidden.py": tests},
    )


def bench_verify(runner: Runner, n: int, episodes: int, workers: int) -> dict[str, float]:
    task = _repair_task(runner)
    plain = []
    for _ in range(n):
        t = time.perf_counter()
        runner.run("pass")
        plain.append(time.perf_counter() - t)
    times = []
    with Session.for_task(runner, task, limits=IDLE_LIMITS) as s:
        s.verify()  # the task's baseline run, once per task
        for i in range(n):
            if i % 2:
                s.exec("echo '# edit' >> solution.py")
            t = time.perf_counter()
            s.verify()
            times.append(time.perf_counter() - t)

    def episode(i: int) -> None:
        with Session.for_task(runner, task, limits=IDLE_LIMITS) as s:
            for k, cmd in enumerate(STEPS[:8] + STEPS[:2]):
                s.exec(cmd, timeout_s=30)
                if k % 2:
                    assert s.verify().reward is not None

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(episode, range(workers)))  # warm
        t = time.perf_counter()
        list(pool.map(episode, range(episodes)))
        took = time.perf_counter() - t
    return {
        "verify_p50_ms": p50(times),
        "verify_plain_run_p50_ms": p50(plain),
        "verify_vs_plain_run": p50(times) / p50(plain),
        "verify_episodes_per_s": episodes / took,
    }


def _serve(slots: int) -> tuple[subprocess.Popen[bytes], str]:
    """``assay serve`` on a free 127.0.0.1 port (records off, as the local side's)."""
    import socket
    import sys

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = ["serve", "--host", "127.0.0.1", "--port", str(port), "--slots", str(slots)]
    proc = subprocess.Popen(
        [sys.executable, "-c", "from assay.cli import main; main()", *argv, "--records", "off"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ASSAY_API_TOKEN": ""},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("assay serve did not start")


def _interleaved(makers: dict[str, Any], task: AgentTask, n: int) -> dict[str, float]:
    """p50 of create, exec, fork and verify on the sessions each of ``makers`` makes, the
    makers taking turns call by call, so both see the same load on a shared machine."""
    times: dict[str, list[float]] = {f"{k}_{op}": [] for k in makers for op in OPS}

    def timed(key: str, fn: Any) -> Any:
        t = time.perf_counter()
        out = fn()
        times[key].append(time.perf_counter() - t)
        return out

    for _ in range(n):
        for name, make in makers.items():
            timed(f"{name}_create", functools.partial(make, limits=IDLE_LIMITS)).close()
    plain = {name: make(limits=IDLE_LIMITS) for name, make in makers.items()}
    tasked = {name: make(task=task, limits=IDLE_LIMITS) for name, make in makers.items()}
    try:
        for name, s in plain.items():
            s.exec("true")
            s.write_file("data.txt", "x" * 1000)
            tasked[name].verify()  # the task's baseline run, once
        for i in range(n * 5):
            for name, s in plain.items():
                timed(f"{name}_exec", functools.partial(s.exec, "true"))
                if i % 5 == 0:
                    timed(f"{name}_fork", s.fork).close()
                    timed(f"{name}_verify", tasked[name].verify)
    finally:
        for s in [*plain.values(), *tasked.values()]:
            s.close()
    return {f"{key}_p50_ms": p50(xs) for key, xs in times.items()}


OPS = ("create", "exec", "fork", "verify")


def bench_remote(runner: Runner, n: int) -> dict[str, float]:
    from assay.client import SessionClient

    task = _repair_task(runner)
    proc, url = _serve(4)
    try:
        with (
            tempfile.TemporaryDirectory() as state,
            LocalExecutor(runner, state_dir=state, records="off") as ex,
            SessionClient(url) as client,
        ):

            def local(task: AgentTask | None = None, **kw: Any) -> Session:
                if task is not None:
                    return Session.for_task(ex, task, **kw)
                return Session(ex, **kw)

            client.session(limits=IDLE_LIMITS).close()  # the server's pool warms up
            out = _interleaved({"local": local, "remote": client.session}, task, n)
    finally:
        proc.terminate()
        proc.wait(30)
    out["remote_exec_overhead_ms"] = out["remote_exec_p50_ms"] - out["local_exec_p50_ms"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="samples for create/exec p50")
    ap.add_argument("--idle", type=int, default=500, help="idle sessions to hold open")
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2 * len(os.sched_getaffinity(0)))
    ap.add_argument("--only", help="run only this part (e.g. verify)")
    args = ap.parse_args()
    with Runner(Sandbox(pool_size=8)) as runner:
        runner.warm_up(8)
        Session(runner, limits=IDLE_LIMITS).close()
        out: dict[str, float] = {}
        for name, fn in [
            ("create/exec", lambda: bench_create_exec(runner, args.runs)),
            ("fork", lambda: bench_fork(runner, 5)),
            ("creates_20", lambda: bench_creates_20(runner)),
            ("episodes", lambda: bench_episodes(runner, args.episodes, args.workers)),
            ("verify", lambda: bench_verify(runner, args.runs, args.episodes, args.workers)),
            ("idle", lambda: bench_idle(runner, args.idle)),
            ("remote", lambda: bench_remote(runner, args.runs)),
        ]:
            if args.only and name != args.only:
                continue
            print(f"{name} ...", flush=True)
            got = fn()
            for key, value in got.items():
                print(f"  {key}: {value:.3f}" if isinstance(value, float) else f"  {key}: {value}")
            out.update(got)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
