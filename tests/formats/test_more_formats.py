"""CodeContests, PrimeIntellect verification_info and AceCoder records (written for these
tests, in the datasets' shapes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay import Runner, ValidationError, formats
from assay.judge import Judge, Submission

CODECONTESTS = {
    "name": "1_A. Sum",
    "description": "Print a+b.",
    "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
    "private_tests": {"input": ["5 5\n"], "output": ["10\n"]},
    "generated_tests": {"input": ["-1 1\n"], "output": ["0\n"]},
    "time_limit": {"seconds": 1, "nanos": 500000000},
    "memory_limit_bytes": 268435456,
    "solutions": {
        "language": [2, 3],
        "solution": ["int main(){}", "print(sum(map(int, input().split())))"],
    },
}
PRIME = {
    "problem_id": "p1",
    "verification_info": json.dumps(
        {
            "language": "python",
            "test_cases": [
                {"type": "function_call", "fn_name": "double", "input": [4], "output": [8]},
                {"type": "function_call", "fn_name": "double", "input": [1], "output": 2},
            ],
        }
    ),
}
ACECODER = {
    "id": "ace-1",
    "question": "Reverse.",
    "test_cases": ["assert rev('ab') == 'ba'", "assert rev('') == ''"],
}


def _load(tmp_path: Path, fmt: str, *records: dict[str, object]):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{fmt}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    return formats.load(path, fmt)


def test_codecontests(tmp_path: Path, runner: Runner) -> None:
    (p,) = _load(tmp_path, "codecontests", CODECONTESTS)
    assert len(p.tests) == 3 and p.limits.time_s == 1.5 and p.limits.memory_mb == 256
    assert p.references == ["print(sum(map(int, input().split())))"]
    assert Judge(runner).judge(Submission(p, p.references[0])).verdict == "accepted"
    assert Judge(runner).judge(Submission(p, "print(3)")).verdict == "wrong_answer"


def test_prime_function_calls(tmp_path: Path, runner: Runner) -> None:
    (p,) = _load(tmp_path, "prime", PRIME)
    assert (
        Judge(runner).judge(Submission(p, "def double(x):\n    return 2 * x\n")).verdict
        == "accepted"
    )


def test_acecoder_asserts(tmp_path: Path, runner: Runner) -> None:
    (p,) = _load(tmp_path, "acecoder", ACECODER)
    j = Judge(runner).judge(Submission(p, "def rev(s):\n    return s[::-1]\n"))
    assert (j.verdict, j.passed) == ("accepted", 2)


def test_bad_records_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as info:
        _load(tmp_path, "prime", {"problem_id": "x", "verification_info": "{}"})
    assert info.value.field == "verification_info"
    with pytest.raises(ValidationError) as info:
        _load(tmp_path, "acecoder", {"id": "y", "test_cases": "assert x"})
    assert info.value.field == "test_cases"


KODCODE = {
    "question_id": "kod-1",
    "question": "Add two numbers.",
    "solution": "def add(a, b):\n    return a + b\n",
    "test": "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}


def test_kodcode_pytest(tmp_path: Path, runner: Runner) -> None:
    (p,) = _load(tmp_path, "kodcode", KODCODE)
    assert Judge(runner).judge(Submission(p, p.references[0])).verdict == "accepted"
    assert (
        Judge(runner).judge(Submission(p, "def add(a, b):\n    return 0\n")).verdict
        == "wrong_answer"
    )
