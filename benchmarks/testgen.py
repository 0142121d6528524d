"""Generated test suites against HumanEval's own tests and HumanEval+, on real model code.

1. Generate a suite for each HumanEval+ task from its prompt, entry point, canonical
   solution and contract only (the generator never sees ``base_input``, ``plus_input`` or
   ``test``), ``--workers`` at a time; time it.
2. Judge the 16,400 CodeT samples (CodeGen-16B, 100 per task) three times: against the
   generated suites, HumanEval's original tests (the baseline) and HumanEval+ (plus
   inputs, the reference verdict), each through ``assay eval --stop-on-failure``.
3. Print the agreement table, then one JSON line.

    .venv/bin/python benchmarks/testgen.py [--tasks 164] [--workers 2] [--seed 0]

``--tasks N`` takes the first N tasks (in HumanEval's order) for a quicker run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from assay import Runner
from assay.evaluate import evaluate
from assay.formats import assay_suite
from assay.testgen import Options, generate_all, task_from_row
from assay.testgen.report import summary

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
GIVEN = ("task_id", "prompt", "entry_point", "canonical_solution", "contract")


def _read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh]


def samples(task_ids: set[str]) -> list[dict[str, str]]:
    """CodeT rows follow the HumanEval task ids sorted as strings."""
    order = sorted(r["task_id"] for r in _read(CORPORA / "humaneval" / "HumanEval.jsonl.gz"))
    out = []
    with open(CORPORA / "codet" / "humaneval-codegen16b-100-samples.jsonl") as fh:
        for task, line in zip(order, fh, strict=True):
            if task in task_ids:
                out += [{"task_id": task, "completion": s} for s in json.loads(line)["samples"]]
    return out


def _reuse(path: Path) -> dict[tuple[str, int], bool]:
    """Verdicts an earlier run of this script wrote (they do not depend on the generator)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    print(f"  reusing {len(rows)} verdicts from {path}")
    return {(r["task_id"], r["sample_index"]): r["verdict"] == "accepted" for r in rows}


def _keys(rows: list[dict[str, str]]) -> list[tuple[str, int]]:
    """``(task_id, sample_index)`` of each row, as ``assay eval`` numbers them (per task, in
    input order)."""
    seen: dict[str, int] = {}
    out = []
    for r in rows:
        out.append((r["task_id"], seen.get(r["task_id"], 0)))
        seen[r["task_id"]] = out[-1][1] + 1
    return out


def judge(
    dataset: Path, fmt: str, samples_path: Path, out: Path, workers: int
) -> dict[tuple[str, int], bool]:
    started = time.monotonic()
    rows = evaluate(
        dataset, fmt, samples_path, out, workers=workers, records="off", stop_on_failure=True
    )
    print(f"  judged {len(rows)} samples against {fmt} in {time.monotonic() - started:.0f} s")
    return {(r["task_id"], r["sample_index"]): r["verdict"] == "accepted" for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tasks", type=int, default=164)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--keep", type=Path, default=None, help="directory to keep the suite and verdicts in"
    )
    ap.add_argument(
        "--baselines",
        type=Path,
        default=None,
        help="reuse humaneval.jsonl and humanevalplus.jsonl verdicts from an earlier run's "
        "--keep directory (they do not depend on the generator)",
    )
    args = ap.parse_args()
    plus = _read(CORPORA / "humanevalplus" / "HumanEvalPlus.jsonl.gz")[: args.tasks]
    tasks = [task_from_row({k: r[k] for k in GIVEN}) for r in plus]  # no test fields
    work = args.keep or Path(tempfile.mkdtemp(prefix="assay-testgen-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"generating suites for {len(tasks)} tasks with {args.workers} workers ...")
    started = time.monotonic()
    with Runner() as runner:
        made, failed = generate_all(runner, tasks, Options(seed=args.seed), args.workers)
    generate_s = time.monotonic() - started
    for task_id, why in failed.items():
        print(f"  no suite for {task_id}: {why}")
    suite = work / "suite.jsonl"
    suite.write_text("".join(assay_suite.dumps(p) + "\n" for p in made))
    print(f"  {len(made)} suites in {generate_s:.0f} s -> {suite}")

    ids = {p.id for p in made}
    rows = samples({t.task_id for t in tasks})
    sample_file = work / "samples.jsonl"
    sample_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    suited = work / "samples-with-suite.jsonl"
    suited.write_text("".join(json.dumps(r) + "\n" for r in rows if r["task_id"] in ids))
    gen = judge(suite, "assay", suited, work / "generated.jsonl", args.workers)
    if args.baselines is not None:
        base = _reuse(args.baselines / "humaneval.jsonl")
        ref = _reuse(args.baselines / "humanevalplus.jsonl")
        missing = [r for r, k in zip(rows, _keys(rows), strict=True) if k not in ref]
        if missing:  # e.g. tasks the earlier run had no suite for, so did not judge
            rest = work / "samples-missing.jsonl"
            rest.write_text("".join(json.dumps(r) + "\n" for r in missing))
            more_base, more_ref = _baselines(rest, work, args.workers, "-missing")
            base.update(more_base)
            ref.update(more_ref)
    else:
        base, ref = _baselines(sample_file, work, args.workers)
    _report(tasks, made, ids, gen, base, ref, plus, generate_s)


def _baselines(
    sample_file: Path, work: Path, workers: int, suffix: str = ""
) -> tuple[dict[tuple[str, int], bool], dict[tuple[str, int], bool]]:
    base = judge(
        CORPORA / "humaneval" / "HumanEval.jsonl.gz",
        "humaneval",
        sample_file,
        work / f"humaneval{suffix}.jsonl",
        workers,
    )
    ref = judge(
        CORPORA / "humanevalplus" / "HumanEvalPlus.jsonl.gz",
        "humanevalplus",
        sample_file,
        work / f"humanevalplus{suffix}.jsonl",
        workers,
    )
    return base, ref


def _report(
    tasks: list[Any],
    made: list[Any],
    ids: set[str],
    gen: dict[tuple[str, int], bool],
    base: dict[tuple[str, int], bool],
    ref: dict[tuple[str, int], bool],
    plus: list[dict[str, Any]],
    generate_s: float,
) -> None:
    keys = sorted(ref)
    # A task without a suite cannot accept anything: its samples count as rejected (this
    # lowers accepted_agreement; its gap samples count as not caught).
    gen = {k: gen.get(k, False) for k in keys}
    accepted = [k for k in keys if ref[k]]
    gap = [k for k in keys if base[k] and not ref[k]]

    def measures(
        v: dict[tuple[str, int], bool], judged: set[str] | None = None
    ) -> tuple[float, float, float, int]:
        acc = sum(v[k] for k in accepted) / len(accepted) if accepted else float("nan")
        caught = (
            sum(not v[k] and (judged is None or k[0] in judged) for k in gap) / len(gap)
            if gap
            else float("nan")
        )
        overall = sum(v[k] == ref[k] for k in keys) / len(keys)
        return acc, caught, overall, sum(v[k] for k in keys)

    s = summary(made)
    all_ids = {t.task_id for t in tasks}
    gen_m, base_m = measures(gen, ids), measures(base)
    sizes = [len(p.tests) for p in made]
    print()
    print(
        f"{len(keys)} CodeT samples of {len(tasks)} tasks ({len(ids)} with a suite); "
        f"HumanEval+ accepts {len(accepted)};"
    )
    print(f"{len(gap)} pass HumanEval's tests but fail HumanEval+ (the gap)")
    print(
        "| tests | tests per task (median) | accepted | accepts what HumanEval+ accepts | rejects the gap | agrees with HumanEval+ |"
    )
    print("|---|---|---|---|---|---|")
    he_sizes = [
        p["test"].count("assert")
        for p in _read(CORPORA / "humaneval" / "HumanEval.jsonl.gz")
        if p["task_id"] in all_ids
    ]
    plus_sizes = [
        len(json.loads(p["base_input"]) if isinstance(p["base_input"], str) else p["base_input"])
        + len(json.loads(p["plus_input"]) if isinstance(p["plus_input"], str) else p["plus_input"])
        for p in plus
        if p["task_id"] in all_ids
    ]
    for name, m, n in (
        ("HumanEval (original)", base_m, statistics.median(he_sizes)),
        ("generated (assay.testgen)", gen_m, statistics.median(sizes)),
        ("HumanEval+ (reference)", measures(ref), statistics.median(plus_sizes)),
    ):
        print(f"| {name} | {n:g} | {m[3]} | {m[0]:.4f} | {m[1]:.4f} | {m[2]:.4f} |")
    scores = [
        p.metadata["quality"]["mutation_score"]
        for p in made
        if p.metadata["quality"]["mutation_score"] is not None
    ]
    at_90 = sum(x >= 0.9 for x in scores)
    print(
        f"mutation score >= 0.9 on {at_90}/{len(tasks)} tasks ({len(scores)} with killable "
        f"mutants; a task without a suite counts as below); line coverage median "
        f"{s['coverage_median']}; reduced cover median {s['cover_size_median']} tests"
    )
    print(
        json.dumps(
            {
                "tasks": len(tasks),
                "tasks_with_suite": len(made),
                "samples": len(keys),
                "accepted_agreement": round(gen_m[0], 4),
                "gap_caught": round(gen_m[1], 4),
                "overall_agreement": round(gen_m[2], 4),
                "baseline_accepted_agreement": round(base_m[0], 4),
                "baseline_gap_caught": round(base_m[1], 4),
                "baseline_overall_agreement": round(base_m[2], 4),
                "tests_per_task_median": statistics.median(sizes),
                "mutation_score_median": s["mutation_score_median"],
                "mutation_score_share_ge_0.9": round(at_90 / len(tasks), 4),
                "generate_s": round(generate_s, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
