"""Claim: a call test's reply costs the trusted process CPU in proportion to its size.

Attack: the submission returns (or writes to its channel itself) one line of tens of MiB,
below the 64 MiB a reply may take. The judge took it 64 KiB at a time, joined it onto what it
had (a new copy of everything so far) and searched all of it for the line's end again per
chunk: a 60 MiB reply cost ~14 s of the trusted process's CPU, a 32 MiB one ~5 s, for one
sample whose own run took a fraction of a second; a policy's batch of such samples holds the
judge's threads for minutes. The channel now appends in place and searches only what came.

Attack: a reply line nested past the JSON parser's depth (``[`` x 100,000). Its
RecursionError escaped the judge's ``except ValueError`` and the sample came back as
``sandbox_error``, which says the service failed: a policy could make its failures look
like ours (retried, or left out of its reward). It is the submission's malformed reply.
"""

from __future__ import annotations

import time

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase

PROBLEM = Problem(
    "flood",
    [TestCase(kind="call", options={"fn_name": "f", "args": [1]}, expected_value="y")],
    Limits(time_s=10, memory_mb=1024),
)


@pytest.mark.parametrize(
    "code",
    [
        "def f(x):\n    return 'x' * (48 << 20)\n",
        # The line written by the program itself, without the call server's encoding.
        "import os\ndata = b'\"' + b'x' * (48 << 20) + b'\"\\n'\nview = memoryview(data)\n"
        "while view:\n    view = view[os.write(3, view):]\ndef f(x):\n    return 'y'\n",
    ],
    ids=["returned", "written to the channel"],
)
def test_a_reply_of_48_mib_costs_the_judge_well_under_a_second_of_cpu(
    runner: Runner, code: str
) -> None:
    judge = Judge(runner)
    start = time.thread_time()  # the judging thread serves the channel (the default tier)
    judged = judge.judge(Submission(PROBLEM, code))
    spent = time.thread_time() - start
    assert judged.tests[0].verdict == "wrong_answer", judged.tests[0]
    # Linear: ~0.25 s here, JSON parsing included; the quadratic join took ~9 s.
    assert spent < 3.0, f"{spent:.2f} s of the judge's CPU for one 48 MiB reply"


def test_a_reply_nested_past_the_parsers_depth_is_the_submissions_wrong_answer(
    runner: Runner,
) -> None:
    code = "import os\nos.write(3, b'[' * 100_000 + b'\\n')\ndef f(x):\n    return 'y'\n"
    judged = Judge(runner).judge(Submission(PROBLEM, code))
    assert judged.verdict == "wrong_answer", judged.reason
    assert "malformed reply" in judged.tests[0].message
