"""The dataset loaders on the real corpora in ../shared/corpora (a few problems judged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import Runner, ValidationError, formats
from assay.formats.evalplus import with_expected
from assay.judge import Judge, Submission

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"
CASES = [
    ("humaneval/HumanEval.jsonl.gz", "humaneval", 164),
    ("humaneval_x/humaneval_python.jsonl.gz", "humaneval-x", 164),
    ("mbpp/mbpp-full.jsonl", "mbpp", 974),
    ("mbpp/sanitized-mbpp.json", "mbpp", 427),
    ("humanevalplus/HumanEvalPlus.jsonl.gz", "humanevalplus", 164),
    ("mbppplus/MbppPlus.jsonl.gz", "mbppplus", 378),
]

pytestmark = pytest.mark.skipif(not CORPORA.exists(), reason=f"corpora not found at {CORPORA}")


@pytest.mark.parametrize(("path", "fmt", "count"), CASES)
def test_loads_and_references_pass(path: str, fmt: str, count: int, runner: Runner) -> None:
    problems = formats.load(CORPORA / path, fmt, tests="base")
    assert len(problems) == count
    judge = Judge(runner)
    for problem in problems[:3]:
        if problem.metadata.get("expected_pending"):
            problem = with_expected(runner, problem)
        j = judge.judge(Submission(problem, problem.references[0]))
        assert j.verdict == "accepted", (problem.id, j.reason)


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as info:
        formats.load(CORPORA / "humaneval/HumanEval.jsonl.gz", "nope")
    assert info.value.field == "format"
    with pytest.raises(ValidationError) as info:
        formats.load(tmp_path / "missing.jsonl", "humaneval")
    assert info.value.field == "dataset"
