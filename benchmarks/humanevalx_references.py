"""HumanEval-X reference solutions through ``assay eval``, per language; one JSON line.

Writes each language's canonical solutions as samples (``{"task_id", "completion"}``: the
body after the prompt, as model samples come) and runs the real CLI on them.

    .venv/bin/python benchmarks/humanevalx_references.py [--languages cpp,go,java,js,python,rust]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "humaneval_x"
ASSAY = Path(sys.executable).with_name("assay")
NAMES = {
    "cpp": "cpp",
    "go": "go",
    "java": "java",
    "js": "javascript",
    "python": "python",
    "rust": "rust",
}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--languages", default="cpp,go,java,js,python,rust")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    out: dict[str, dict[str, object]] = {}
    for lang in args.languages.split(","):
        dataset = CORPORA / f"humaneval_{lang}.jsonl.gz"
        with gzip.open(dataset, "rt") as fh:
            records = [json.loads(line) for line in fh]
        with tempfile.TemporaryDirectory() as tmp:
            samples = Path(tmp) / "samples.jsonl"
            samples.write_text(
                "".join(
                    json.dumps({"task_id": r["task_id"], "completion": r["canonical_solution"]})
                    + "\n"
                    for r in records
                )
            )
            results = Path(tmp) / "results.jsonl"
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    str(ASSAY),
                    "eval",
                    str(dataset),
                    "--format",
                    "humaneval-x",
                    "--language",
                    NAMES[lang],
                    "--samples",
                    str(samples),
                    "--out",
                    str(results),
                    "--workers",
                    str(args.workers),
                    "--records",
                    "off",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            elapsed = time.perf_counter() - t0
            if proc.returncode != 0:
                print(f"{lang}: assay eval failed ({proc.returncode}): {proc.stderr[-800:]}")
                out[lang] = {"accepted": 0, "total": len(records), "error": proc.returncode}
                continue
            rows = [json.loads(line) for line in results.read_text().splitlines()]
        accepted = sum(r["verdict"] == "accepted" for r in rows)
        for r in rows:
            if r["verdict"] != "accepted":
                print(f"  {r['task_id']}: {r['verdict']}: {r['reason'][:200]}")
        print(f"{lang}: {accepted}/{len(rows)} accepted in {elapsed:.0f} s", flush=True)
        out[lang] = {"accepted": accepted, "total": len(rows)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
