"""LiveCodeBench records (written for these tests, in the dataset's shape). Private tests are
pickled: they must be decoded in the sandbox, so a hostile pickle cannot touch the host."""

from __future__ import annotations

import base64
import json
import os
import pickle
import uuid
import zlib
from pathlib import Path

import pytest

from assay import Runner, ValidationError, formats
from assay.judge import Judge, Submission


def _blob(obj: object) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj))).decode()


class _Evil:
    """Unpickling this runs a shell command (as any pickle may)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def _record(private: str) -> dict[str, object]:
    return {
        "question_id": "lcb-1",
        "question_content": "Double the number.",
        "public_test_cases": json.dumps([{"input": "3\n", "output": "6\n", "testtype": "stdin"}]),
        "private_test_cases": private,
        "metadata": json.dumps({}),
    }


def _load(tmp_path: Path, runner: Runner, record: dict[str, object]):  # type: ignore[no-untyped-def]
    path = tmp_path / "lcb.jsonl"
    path.write_text(json.dumps(record))
    return formats.load(path, "livecodebench", runner=runner)


def test_private_tests_are_decoded_in_the_sandbox(tmp_path: Path, runner: Runner) -> None:
    private = _blob(json.dumps([{"input": "10\n", "output": "20\n", "testtype": "stdin"}]))
    (p,) = _load(tmp_path, runner, _record(private))
    assert [t.input for t in p.tests] == ["3\n", "10\n"]
    assert Judge(runner).judge(Submission(p, "print(2 * int(input()))")).verdict == "accepted"


def test_functional_tests(tmp_path: Path, runner: Runner) -> None:
    record = _record("")
    record["public_test_cases"] = json.dumps(
        [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]
    )
    record["metadata"] = json.dumps({"func_name": "append"})
    (p,) = _load(tmp_path, runner, record)
    code = "class Solution:\n    def append(self, xs, x):\n        return xs + [x]\n"
    assert Judge(runner).judge(Submission(p, code)).verdict == "accepted"


def test_hostile_pickle_never_runs_on_the_host(tmp_path: Path, runner: Runner) -> None:
    marker = f"/tmp/assay-pickle-{uuid.uuid4().hex}"
    with pytest.raises(ValidationError) as info:
        _load(tmp_path, runner, _record(_blob(_Evil(marker))))
    assert info.value.field == "private_test_cases"
    assert not os.path.exists(marker)
