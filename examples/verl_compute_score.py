"""Assay as veRL's reward: ``compute_score`` / ``compute_score_batch`` on a tiny dataset.

In a veRL run (0.9.1 tested), name the function under ``reward.`` (no copy needed; the README
section "veRL" has the exact commands, which tests/integrations/test_verl_loop.py runs):

    reward.custom_reward_function.path=pkg://assay.integrations.verl
    reward.custom_reward_function.name=compute_score_async   # veRL's naive manager, rows concurrent
    # or path=<site-packages>/assay/integrations/verl.py (veRL loads the file on its own)
    # options: +reward.custom_reward_function.reward_kwargs.url=http://judge:8080
    # older veRL (legacy reward workers): name=compute_score_batch reward_model.reward_manager=batch

Each row's ``reward_model.ground_truth`` may be APPS/TACO ``input_output``, veRL's
``{"inputs", "outputs", "fn_name"?}``, PRIME ``verification_info`` or LiveCodeBench
``public_test_cases`` (function name in ``extra_info["metadata"]``). Run standalone:

    .venv/bin/python examples/verl_compute_score.py
"""

from __future__ import annotations

import json
from typing import Any

from assay.integrations.verl import compute_score, compute_score_batch

FENCE = "`" * 3

ROWS: list[dict[str, Any]] = [
    {  # veRL / APPS stdio tests, as a JSON string
        "data_source": "codecontests",
        "ground_truth": json.dumps({"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}),
        "extra_info": {"index": 0},
        "responses": [
            f"Read two numbers:\n{FENCE}python\n"
            f"a, b = map(int, input().split())\nprint(a + b)\n{FENCE}",
            f"{FENCE}python\nprint(3)\n{FENCE}",
        ],
    },
    {  # PRIME verification_info with function-call tests
        "data_source": "primeintellect",
        "ground_truth": {
            "language": "python",
            "test_cases": [
                {"type": "function_call", "fn_name": "square", "input": [3], "output": [9]},
                {"type": "function_call", "fn_name": "square", "input": [-2], "output": [4]},
            ],
        },
        "extra_info": {"index": 1},
        "responses": [
            f"{FENCE}python\ndef square(x):\n    return x * x\n{FENCE}",
            f"{FENCE}python\ndef square(x):\n    return x + x\n{FENCE}",
        ],
    },
    {  # LiveCodeBench public tests, LeetCode style
        "data_source": "livecodebench",
        "ground_truth": json.dumps(
            [{"input": "[1, 2, 3]", "output": "6", "testtype": "functional"}]
        ),
        "extra_info": {"index": 2, "metadata": {"func_name": "total"}},
        "responses": [
            f"{FENCE}python\nclass Solution:\n    def total(self, nums):\n"
            f"        return sum(nums)\n{FENCE}",
            "I am not sure.",
        ],
    },
]


def main() -> None:
    print("one row per call (compute_score):")
    for row in ROWS:
        for response in row["responses"]:
            s = compute_score(row["data_source"], response, row["ground_truth"], row["extra_info"])
            print(
                f"  {row['data_source']:15} score={s['score']} {s['verdict']} "
                f"{s['passed']}/{s['total']} valid={s['valid']}"
            )

    print("the whole step at once (compute_score_batch):")
    flat = [(row, response) for row in ROWS for response in row["responses"]]
    scores = compute_score_batch(
        [row["data_source"] for row, _ in flat],
        [response for _, response in flat],
        [row["ground_truth"] for row, _ in flat],
        [row["extra_info"] for row, _ in flat],
    )
    print("  scores:", [s["score"] for s in scores])
    print("  same keys on every row:", len({tuple(s) for s in scores}) == 1)


if __name__ == "__main__":
    main()
