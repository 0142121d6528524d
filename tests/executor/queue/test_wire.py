"""The fleet's wire format: jobs and results survive the trip as JSON, and a message that is
not one (written to the broker by something else) is refused, never executed."""

from __future__ import annotations

import json

import pytest

from assay import ExecResult, Judgement, Limits, Problem, RunJob, Submission, TestCase, TestResult
from assay.executor import JobResult
from assay.executor.queue._wire import (
    Malformed,
    decode_job,
    decode_result,
    encode_job,
    encode_result,
)


def test_a_submission_with_call_tests_round_trips() -> None:
    problem = Problem(
        "p1",
        [
            TestCase(
                "call",
                options={"fn_name": "f", "args": [(1, 2), {3: b"x"}]},
                expected_value={1.5, None},
            ),
            TestCase("stdio", input="1 2\n", expected="3\n", weight=2.0),
        ],
        Limits(time_s=2.0, memory_mb=128),
        metadata={"source": "test", "big": 1 << 80},
        image="img",
        network="loopback",
    )
    job = Submission(problem, b"def f(*a): pass", "python")
    assert decode_job(encode_job(job, True)) == (job, True)


def test_a_run_with_bytes_and_files_round_trips() -> None:
    job = RunJob(
        "print(input())",
        "python",
        b"\xff\x00",
        Limits(time_s=1.0),
        files=(("data.bin", b"\x01\x02"),),
        collect=("out.txt",),
        cache=True,
        isolation="gvisor",
    )
    assert decode_job(encode_job(job, False)) == (job, False)


def test_a_result_with_judgement_and_run_round_trips() -> None:
    result = JobResult(
        index=4,
        job_id="b-4",
        outcome="done",
        verdict="wrong_answer",
        reward=0.0,
        reason="test 2",
        judgement=Judgement("wrong_answer", [TestResult(0, "accepted", 0.1, 0.2, 3, "")], 0.0, "t"),
        result=ExecResult("ok", 0, stdout=b"\xfe", files={"out.txt": b"1"}),
        attempts=2,
        source_job_id="b-4",
        worker="w1",
    )
    back = decode_result(encode_result(result), 4, "b-4")
    assert back == result
    assert back.result is not None and back.result.files == {"out.txt": b"1"}


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"k": "s", "stop": false}',
        b'{"k": "pickle", "stop": false}',
        # A test value must be the judge's tagged form of a plain value: a type is refused.
        json.dumps(
            {
                "k": "s",
                "stop": False,
                "c": "x",
                "l": "python",
                "p": {
                    "id": "p",
                    "tests": [
                        {
                            "kind": "call",
                            "input": "",
                            "expected": None,
                            "compare": "tokens",
                            "name": "",
                            "weight": 1.0,
                            "code": "",
                            "options": ["d", []],
                            "expected_value": ["T", "object"],
                        }
                    ],
                    "limits": [1.0, None, 256, 64, 1 << 20, 1 << 20, 64],
                    "checker": None,
                    "references": [],
                    "metadata": ["d", []],
                    "image": None,
                },
            }
        ).encode(),
    ],
)
def test_a_message_that_is_not_a_job_is_refused(body: bytes) -> None:
    with pytest.raises(Malformed):
        decode_job(body)
