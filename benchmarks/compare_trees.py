"""Two source trees of Assay, alternately, on the same machine in the same minutes: warm
sandboxed ``print(1)`` runs, their p50 at concurrency 1 and their throughput, machine time
and trusted (this process's) CPU per run at concurrency = cores. For a change's effect on a
host whose speed drifts between two runs of one script by more than the change (the rounds
interleave, so drift hits both).

``--work calls`` judges a real call-test sample instead of each run: HumanEval/0's
reference (``../shared/corpora``), its 7 tests in one sandbox run of the call server, as
``assay eval`` judges a sample. ``--work plus`` judges the same reference on HumanEval+'s
1,006 tests of that task (expected values computed by running the canonical solution in the
sandbox first), where the trusted side's work per test (encoding the calls, parsing and
grading the replies) outweighs the run's.

Each round starts a fresh process per tree, with ``PYTHONPATH=<tree>/src``; the figures are
medians over the rounds. Ends with one JSON line.

    git archive OLD | tar -x -C /tmp/old && git archive NEW | tar -x -C /tmp/new
    .venv/bin/python benchmarks/compare_trees.py /tmp/old /tmp/new [--rounds 6] [--seconds 4]
    .venv/bin/python benchmarks/compare_trees.py /tmp/old /tmp/new --work calls
    .venv/bin/python benchmarks/compare_trees.py /tmp/old /tmp/new --work plus --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

#: One round for one tree: p50 at concurrency 1 (300 runs), then runs/s and machine time
#: per run (from /proc/stat) at concurrency = cores for ``--seconds``.
_ROUND = r"""
import json, os, sys, time
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, sys.argv[1])
from sandbox_overhead import print_one

runner, sandboxed, _bare = print_one(sys.argv[3])
if sys.argv[4] in ("calls", "plus"):
    from pathlib import Path
    from assay import formats
    from assay.judge import Judge, Submission

    corpora = Path(sys.argv[1]).parents[1] / "shared" / "corpora"
    if sys.argv[4] == "calls":
        data = corpora / "humaneval" / "HumanEval.jsonl.gz"
        problem = next(p for p in formats.load(data, "humaneval") if p.id == "HumanEval/0")
    else:
        from assay.formats.evalplus import with_expected

        data = corpora / "humanevalplus" / "HumanEvalPlus.jsonl.gz"
        problem = next(p for p in formats.load(data, "humanevalplus") if p.id == "HumanEval/0")
        problem = with_expected(runner, problem)
    sample, judge = Submission(problem, problem.references[0]), Judge(runner)

    def sandboxed():
        judged = judge.judge(sample, stop_on_failure=True)
        assert judged.verdict == "accepted", judged.reason
for _ in range(100):
    sandboxed()
lat = []
for _ in range(300):
    t = time.perf_counter()
    sandboxed()
    lat.append(time.perf_counter() - t)


def busy():
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    return sum(v) - v[3] - v[4]


seconds, cores, n = float(sys.argv[2]), len(os.sched_getaffinity(0)), [0]
b0, t0, c0 = busy(), time.perf_counter(), time.process_time()


def loop():
    while time.perf_counter() - t0 < seconds:
        sandboxed()
        n[0] += 1


with ThreadPoolExecutor(cores) as pool:
    list(pool.map(lambda _: loop(), range(cores)))
wall, ticks, cpu = time.perf_counter() - t0, busy() - b0, time.process_time() - c0
runner.close()
print(json.dumps({
    "runs_per_s": n[0] / wall,
    "machine_ms_per_run": ticks / os.sysconf("SC_CLK_TCK") / n[0] * 1000,
    "trusted_ms_per_run": cpu / n[0] * 1000,
    "p50_ms": sorted(lat)[150] * 1000,
}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("trees", nargs=2, type=Path, help="two checkouts (each with src/assay)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=4.0, help="throughput loop per round")
    ap.add_argument("--python", default="/usr/bin/python3", help="the sandbox's interpreter")
    ap.add_argument(
        "--work",
        choices=("print", "calls", "plus"),
        default="print",
        help="each run: print(1), or a judged call-test sample: HumanEval/0's reference "
        "(calls: its 7 tests; plus: HumanEval+'s 1,006)",
    )
    args = ap.parse_args()
    for tree in args.trees:
        if not (tree / "src" / "assay").is_dir():
            ap.error(f"{tree} has no src/assay")
    here = str(Path(__file__).resolve().parent)
    rows: dict[str, list[dict[str, float]]] = {str(t): [] for t in args.trees}
    for r in range(args.rounds):
        for tree in args.trees:
            env = {**os.environ, "PYTHONPATH": str(tree.resolve() / "src")}
            cmd = [sys.executable, "-c", _ROUND, here, str(args.seconds), args.python, args.work]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if out.returncode:
                raise SystemExit(f"{tree}: {out.stderr[-2000:]}")
            row = json.loads(out.stdout.splitlines()[-1])
            rows[str(tree)].append(row)
            print(
                f"round {r + 1}  {tree!s:30} {row['runs_per_s']:7.1f} runs/s  "
                f"{row['machine_ms_per_run']:5.2f} ms/run  trusted "
                f"{row['trusted_ms_per_run']:5.3f} ms/run  p50 {row['p50_ms']:5.2f} ms",
                flush=True,
            )
    result = {
        tree: {k: round(statistics.median(x[k] for x in got), 3) for k in got[0]}
        for tree, got in rows.items()
    }
    for tree, med in result.items():
        print(
            f"median   {tree:30} {med['runs_per_s']:7.1f} runs/s  "
            f"{med['machine_ms_per_run']:5.2f} ms/run  trusted {med['trusted_ms_per_run']:5.3f} "
            f"ms/run  p50 {med['p50_ms']:5.2f} ms"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
