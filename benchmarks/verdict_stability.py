"""Same input, same verdict: CodeT samples judged once with 1 worker on an idle machine and
once with all workers while CPU hogs run beside them; the verdicts must be identical.
``--tiers`` judges them on the default tier and under gVisor instead (2 workers each).

    .venv/bin/python benchmarks/verdict_stability.py [--limit 500] [--hogs 8]
    .venv/bin/python benchmarks/verdict_stability.py --tiers --limit 2500

Ends with one JSON line: ``samples``, ``identical``, ``differences``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from eval_throughput import CORPORA, load

from assay import Runner, formats
from assay.judge import Judge, Submission
from assay.sandbox import SandboxConfig
from assay.sandbox.gvisor import available


def judge_all(
    pairs: list[tuple[dict[str, str], str]], workers: int, isolation: str = "default"
) -> list[str]:
    problems = {
        p.id: p for p in formats.load(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "humaneval")
    }
    with Runner(config=SandboxConfig(isolation=isolation)) as runner:
        judge = Judge(runner)

        def one(pair: tuple[dict[str, str], str]) -> str:
            task, sample = pair
            return judge.judge(
                Submission(problems[task["task_id"]], task["prompt"] + sample)
            ).verdict

        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(one, pairs))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--hogs", type=int, default=8)
    ap.add_argument("--tiers", action="store_true", help="default tier against gVisor")
    args = ap.parse_args()
    pairs = load()
    step = len(pairs) / args.limit
    pairs = [pairs[int(i * step)] for i in range(args.limit)]
    if args.tiers:
        ok, why = available()
        if not ok:
            raise SystemExit(f"the gVisor tier is not available here: {why}")
        first, second = judge_all(pairs, 2), judge_all(pairs, 2, "gvisor")
        report(pairs, first, second, "on the default tier vs under gVisor")
        return
    idle = judge_all(pairs, 1)
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(args.hogs)
    ]
    try:
        busy = judge_all(pairs, 2 * len(os.sched_getaffinity(0)))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    report(pairs, idle, busy, "idle vs loaded")


def report(pairs: list[tuple[dict[str, str], str]], a: list[str], b: list[str], how: str) -> None:
    diffs = [(p[0]["task_id"], x, y) for p, x, y in zip(pairs, a, b, strict=True) if x != y]
    for d in diffs:
        print("DIFFERENT", *d)
    print(f"{len(pairs)} samples: {len(pairs) - len(diffs)} identical verdicts {how}")
    print(
        json.dumps(
            {"samples": len(pairs), "identical": len(pairs) - len(diffs), "differences": len(diffs)}
        )
    )


if __name__ == "__main__":
    main()
