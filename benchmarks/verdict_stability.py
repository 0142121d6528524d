"""Same input, same verdict: CodeT samples judged once with 1 worker on an idle machine and
once with all workers while CPU hogs run beside them; the verdicts must be identical.

    .venv/bin/python benchmarks/verdict_stability.py [--limit 500] [--hogs 8]

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


def judge_all(pairs: list[tuple[dict[str, str], str]], workers: int) -> list[str]:
    problems = {
        p.id: p for p in formats.load(CORPORA / "humaneval" / "HumanEval.jsonl.gz", "humaneval")
    }
    with Runner() as runner:
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
    args = ap.parse_args()
    pairs = load()
    step = len(pairs) / args.limit
    pairs = [pairs[int(i * step)] for i in range(args.limit)]
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
    diffs = [(p[0]["task_id"], a, b) for p, a, b in zip(pairs, idle, busy, strict=True) if a != b]
    for d in diffs:
        print("DIFFERENT", *d)
    print(f"{len(pairs)} samples: {len(pairs) - len(diffs)} identical verdicts idle vs loaded")
    print(
        json.dumps(
            {"samples": len(pairs), "identical": len(pairs) - len(diffs), "differences": len(diffs)}
        )
    )


if __name__ == "__main__":
    main()
