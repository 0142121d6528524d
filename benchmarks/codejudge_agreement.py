"""Agreement of Assay's verdicts with CodeJudge's recorded ones (HumanEval-X model samples).

For each row of ``<lang>_test_results.jsonl`` the program CodeJudge ran is the import header
it prepends, the prompt and the generation; Assay judges that program against the task's
HumanEval-X tests. A CodeJudge "timed out" agrees with any non-accepted verdict (it depends
on their machine). Prints the agreement and every disagreement, then one JSON line.

    .venv/bin/python benchmarks/codejudge_agreement.py [--lang python]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from assay import Runner, formats
from assay.judge import Judge, Submission

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def header_of(test_code: str, prompt: str) -> str:
    """The import lines CodeJudge put before the prompt."""
    cut = test_code.find(prompt.strip()[:60])
    return test_code[:cut] if cut > 0 else ""


def submission_code(row: dict[str, object], setup: str, test: str) -> str:
    """The part of the program CodeJudge ran that is the submission's: their ``test_code`` is
    setup + header + prompt + generation + test; Assay puts setup and test around it."""
    prompt, gen, test_code = str(row["prompt"]), str(row["generation"]), str(row["test_code"])
    body = test_code
    if setup.strip() and body.lstrip().startswith(setup.strip()):
        body = body.lstrip()[len(setup.strip()) :]
    cut = body.rfind(test.strip()[:200])
    if cut > 0:
        return body[:cut]
    return header_of(test_code, prompt) + prompt + gen


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lang", default="python", choices=["python", "cpp", "go", "java", "js"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    rows = [
        json.loads(line) for line in open(CORPORA / "codejudge" / f"{args.lang}_test_results.jsonl")
    ]
    problems = {
        p.id: p
        for p in formats.load(
            CORPORA / "humaneval_x" / f"humaneval_{args.lang}.jsonl.gz", "humaneval-x"
        )
    }
    with Runner() as runner:
        judge = Judge(runner)

        def one(row: dict[str, object]) -> tuple[dict[str, object], str, str]:
            problem = problems[str(row["task_id"])]
            language = str(problem.metadata["language"])
            if language == "python":
                code = (
                    header_of(str(row["test_code"]), str(row["prompt"]))
                    + str(row["prompt"])
                    + str(row["generation"])
                )
            else:
                test = problem.tests[0]
                code = submission_code(row, str(test.options.get("setup", "")), test.code)
            j = judge.judge(Submission(problem, code, language))
            return row, j.verdict, j.reason

        with ThreadPoolExecutor(args.workers) as pool:
            results = list(pool.map(one, rows))
    agree = 0
    disagreements = []
    for row, verdict, reason in results:
        theirs = str(row["result"])
        ok = verdict == "accepted"
        if theirs == "timed out":
            same = not ok
        else:
            same = ok == bool(row["passed"])
        agree += same
        if not same:
            disagreements.append((row["task_id"], theirs[:80], verdict, reason[:160]))
    for d in disagreements:
        print("DISAGREE", *d, sep=" | ")
    share = agree / len(results)
    print(f"{args.lang}: {agree}/{len(results)} verdicts agree ({share:.1%})")
    print(
        json.dumps(
            {
                "language": args.lang,
                "agree": agree,
                "total": len(results),
                "agreement": round(share, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
