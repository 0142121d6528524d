"""What the sandbox's throughput at concurrency = cores owes to the host, not to Assay's code.

Four A/Bs, each alternated round by round (the host is shared and noisy, so only figures
from the same minutes are compared):

- ``clients``: sandboxed ``print(1)`` runs at concurrency = cores from threads of one
  process (one runner, as ``sandbox_overhead.py`` and every trainer's process do) against
  the same number of processes with a runner each. If the trusted process's threads held
  each other up (its interpreter lock, its locks), the processes would be faster.
- ``rcu`` (root): the same runs with the kernel's expedited RCU grace periods (the default)
  and with ``/sys/kernel/rcu_normal`` set to 1, as a PREEMPT_RT kernel does after boot
  (``rcupdate.rcu_normal_after_boot``). Each slot's reset between runs detaches four mounts,
  and each detach waits for a grace period. Under the knob, the default sandbox (which
  keeps more idle slots there) and one with the default host's pool size. The knob is
  host-wide: the script sets it back to what it was, also when interrupted.
- ``callers``: one runner's ``print(1)`` runs with concurrency = cores callers and with one
  more, with the share of the CPUs busy meanwhile (``/proc/stat``). Runs bound by CPU
  could not go faster with one more caller; runs bound by the hand-offs on each run's path
  (the CPUs idle meanwhile) do.
- ``haltpoll`` (root, a KVM guest with the haltpoll cpuidle driver): the same runs, and bare
  ``python3 -c`` spawns, with the guest's halt polling off (``guest_halt_poll_ns`` 0) and on
  (200000, the kernel's default): whether an idle vCPU's wake-up from halt is what a run's
  hand-offs wait for. Set back to what it was, also when interrupted.

Example::

    .venv/bin/python benchmarks/host_factors.py --parts clients --rounds 6
    .venv/bin/python benchmarks/host_factors.py --parts rcu --rounds 3 --runs 600
    .venv/bin/python benchmarks/host_factors.py --parts callers --rounds 4
    .venv/bin/python benchmarks/host_factors.py --parts haltpoll --rounds 3
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import assay
from assay.sandbox import open_sandbox

sys.path.insert(0, str(Path(__file__).parent))
from sandbox_overhead import _throughput, print_one, sandboxed_print

RCU_NORMAL = "/sys/kernel/rcu_normal"
HALT_POLL = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"
PYTHON = "/usr/bin/python3"


def _warm(runner: assay.Runner) -> Callable[[], None]:
    """``runner``'s slots started and 30 runs done: its timed ``print(1)`` run."""
    runner.sandbox.warm_up()
    run = sandboxed_print(runner)
    for _ in range(30):
        run()
    return run


def _one_client(ready: mp.Queue, go: mp.Event, runs: int) -> None:  # type: ignore[type-arg]
    with assay.Runner(config=assay.SandboxConfig(python=PYTHON)) as runner:
        run = _warm(runner)
        ready.put("ready")
        go.wait()
        t = time.perf_counter()
        for _ in range(runs):
            run()
        ready.put(time.perf_counter() - t)


def _processes(clients: int, runs: int) -> float:
    """Runs/s of ``clients`` processes, each with its own runner, started together."""
    ctx = mp.get_context("spawn")
    ready, go = ctx.Queue(), ctx.Event()
    each = runs // clients
    procs = [ctx.Process(target=_one_client, args=(ready, go, each)) for _ in range(clients)]
    for p in procs:
        p.start()
    for _ in procs:
        assert ready.get(timeout=120) == "ready"
    go.set()
    seconds = max(ready.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return each * clients / seconds


def clients_ab(rounds: int, runs: int, clients: int) -> dict[str, object]:
    threads, processes = [], []
    for i in range(rounds):
        with assay.Runner(config=assay.SandboxConfig(python=PYTHON)) as runner:
            threads.append(_throughput(_warm(runner), runs, clients))
        processes.append(_processes(clients, runs))
        print(
            f"round {i + 1}: {clients} threads of one process {threads[-1]:.1f} runs/s, "
            f"{clients} processes {processes[-1]:.1f} runs/s",
            flush=True,
        )
    return {
        "threads_runs_per_s": [round(x, 1) for x in threads],
        "processes_runs_per_s": [round(x, 1) for x in processes],
        "threads_mean": round(statistics.mean(threads), 1),
        "processes_mean": round(statistics.mean(processes), 1),
    }


def _cpu_ticks() -> tuple[int, int]:
    """The machine's busy and total CPU ticks so far (``/proc/stat``; idle and iowait are
    not busy)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def callers_ab(rounds: int, runs: int, clients: int) -> dict[str, object]:
    """Per round, one warm runner: runs/s and the CPUs' busy share with ``clients`` callers,
    then with one more."""
    counts = (clients, clients + 1)
    rates: dict[int, list[float]] = {c: [] for c in counts}
    busy: dict[int, list[float]] = {c: [] for c in counts}
    for i in range(rounds):
        with assay.Runner(config=assay.SandboxConfig(python=PYTHON)) as runner:
            run = _warm(runner)
            for c in counts:
                (b0, t0), rate, (b1, t1) = _cpu_ticks(), _throughput(run, runs, c), _cpu_ticks()
                rates[c].append(rate)
                busy[c].append((b1 - b0) / max(1, t1 - t0))
        print(
            f"round {i + 1}: "
            + ", ".join(
                f"{c} callers {rates[c][-1]:.1f} runs/s ({busy[c][-1]:.0%} busy)" for c in counts
            ),
            flush=True,
        )
    return {
        f"{c}_callers": {
            "runs_per_s": [round(x, 1) for x in rates[c]],
            "busy": [round(x, 3) for x in busy[c]],
            "runs_per_s_mean": round(statistics.mean(rates[c]), 1),
            "busy_mean": round(statistics.mean(busy[c]), 3),
        }
        for c in counts
    }


@contextmanager
def _host_knob(path: str, part: str, needs: str) -> Iterator[Callable[[str], None]]:
    """A setter for the host-wide knob ``path``, which is set back to the value it had when
    the block ends, also when interrupted; exits naming ``--parts part`` if not writable."""
    if not os.access(path, os.W_OK):
        sys.exit(f"--parts {part}: {path} is not writable here ({needs})")
    with open(path) as fh:
        was = fh.read().strip()

    def knob(value: str) -> None:
        with open(path, "w") as fh:
            fh.write(value)

    try:
        yield knob
    finally:
        knob(was)


def haltpoll_ab(rounds: int, runs: int, clients: int) -> dict[str, object]:
    """Per round, the sandbox's ``print(1)`` runs and bare spawns (a fifth as many), with
    the guest's halt polling off and on."""
    values = ("0", "200000")
    out: dict[str, list[float]] = {
        f"{kind}_{v}": [] for v in values for kind in ("sandbox", "bare")
    }
    runner, sandboxed, bare = print_one(PYTHON)
    with runner, _host_knob(HALT_POLL, "haltpoll", "root, haltpoll guest") as knob:
        for _ in range(30):
            sandboxed()
        for i in range(rounds):
            for value in values:
                knob(value)
                out[f"sandbox_{value}"].append(_throughput(sandboxed, runs, clients))
                out[f"bare_{value}"].append(_throughput(bare, max(clients, runs // 5), clients))
            print(
                f"round {i + 1}: " + ", ".join(f"{k} {v[-1]:.1f} runs/s" for k, v in out.items()),
                flush=True,
            )
    return {f"poll_ns_{k}_runs_per_s": [round(x, 1) for x in v] for k, v in out.items()}


def rcu_ab(rounds: int, runs: int, clients: int) -> dict[str, object]:
    """Per round: the default sandbox with expedited grace periods; then, with
    ``rcu_normal`` = 1, the default sandbox (which reads the knob and keeps more idle slots)
    and one with the pool the default host gets (what every host got before)."""
    config = assay.SandboxConfig(python=PYTHON)
    # (name, knob, whether the pool is the default host's: the size "expedited" got)
    cases = (
        ("expedited", "0", False),
        ("rcu_normal", "1", False),
        ("rcu_normal_small_pool", "1", True),
    )
    out: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    pools: dict[str, int] = {}
    with _host_knob(RCU_NORMAL, "rcu", "run as root") as knob:
        for i in range(rounds):
            for name, value, small in cases:
                knob(value)
                size = pools["expedited"] if small else None
                with assay.Runner(open_sandbox(config, pool_size=size)) as runner:
                    pools[name] = runner.sandbox.pool_size
                    out[name].append(_throughput(_warm(runner), runs, clients))
            print(
                f"round {i + 1}: "
                + ", ".join(
                    f"{name} (pool {pools[name]}) {out[name][-1]:.1f} runs/s" for name in out
                ),
                flush=True,
            )
    return {"pool_size": pools} | {
        f"{k}_runs_per_s": [round(x, 1) for x in v] for k, v in out.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--parts", default="clients", help="comma-separated: clients, rcu, callers, haltpoll"
    )
    ap.add_argument("--rounds", type=int, default=4, help="alternations (default 4)")
    ap.add_argument("--runs", type=int, default=1500, help="runs per measurement (default 1500)")
    ap.add_argument(
        "--clients", type=int, default=os.cpu_count() or 2, help="concurrency (default: cores)"
    )
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    known = {"clients", "rcu", "callers", "haltpoll"}
    unknown = sorted(set(parts) - known)
    if unknown:
        ap.error(f"--parts: unknown {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
    result: dict[str, object] = {}
    if "clients" in parts:
        result["clients"] = clients_ab(args.rounds, args.runs, args.clients)
    if "rcu" in parts:
        result["rcu"] = rcu_ab(args.rounds, args.runs, args.clients)
    if "callers" in parts:
        result["callers"] = callers_ab(args.rounds, args.runs, args.clients)
    if "haltpoll" in parts:
        result["haltpoll"] = haltpoll_ab(args.rounds, args.runs, args.clients)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
