"""MultiPL-E rows (schema of nuprl/MultiPL-E; the rows below were written for this test from
HumanEval task 53, `add`, in MultiPL-E's layout: prompt + completion + tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay import Judge, Runner, Submission, formats
from assay.errors import ValidationError

ROWS = [
    {
        "name": "HumanEval_53_add",
        "language": "cpp",
        "prompt": "#include<assert.h>\n#include<bits/stdc++.h>\n// Add two numbers x and y\nlong add(long x, long y) {\n",
        "tests": "}\nint main() {\n    auto candidate = add;\n    assert(candidate((0), (1)) == (1));\n    assert(candidate((5), (7)) == (12));\n}\n",
        "stop_tokens": ["\n}"],
    },
    {
        "name": "HumanEval_53_add",
        "language": "py",
        "prompt": 'def add(x: int, y: int) -> int:\n    """Add two numbers x and y"""\n',
        "tests": "def check(candidate):\n    assert candidate(0, 1) == 1\n    assert candidate(5, 7) == 12\n\ndef test_check():\n    check(add)\n\ntest_check()\n",
        "stop_tokens": ["\ndef"],
    },
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "multipl-e.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_rows_load_per_language(dataset: Path) -> None:
    [cpp] = formats.load(dataset, "multipl-e", language="cpp")
    assert cpp.metadata["language"] == "cpp" and cpp.tests[0].kind == "script"
    [py] = formats.load(dataset, "multipl-e", language="py")
    assert py.metadata["language"] == "python" and py.tests[0].options["requires"] == ["add"]
    assert len(formats.load(dataset, "multipl-e")) == 2


def test_prompt_plus_completion_is_judged(dataset: Path, runner: Runner) -> None:
    judge = Judge(runner)
    for language, good, bad in [
        ("cpp", "    return x + y;\n", "    return x * y;\n"),
        ("python", "    return x + y\n", "    return x * y\n"),
    ]:
        [p] = formats.load(dataset, "multipl-e", language=language)
        prompt = p.metadata["prompt"]
        assert judge.judge(Submission(p, prompt + good, language)).verdict == "accepted"
        assert judge.judge(Submission(p, prompt + bad, language)).verdict != "accepted"


def test_unknown_languages_are_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({**ROWS[0], "language": "cobol"}) + "\n")
    with pytest.raises(ValidationError, match=r"records\[0\].language"):
        formats.load(path, "multipl-e")
