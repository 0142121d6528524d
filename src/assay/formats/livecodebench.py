"""LiveCodeBench (code generation): public tests as JSON, private tests as
base64(zlib(pickle(JSON))). Unpickling runs code by design, so the private tests are decoded
in a sandbox, never in the trusted process; only the JSON that comes out is read here.

``testtype`` ``stdin`` gives stdio tests; ``functional`` gives call tests on
``metadata.func_name`` (LeetCode style, a ``Solution`` method), one JSON argument per input
line and a JSON expected value.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..runner import Runner
from ..types import Limits

LIMITS = Limits(time_s=6.0, memory_mb=1024)
DECODE_LIMITS = Limits(time_s=30.0, memory_mb=2048, output_bytes=512 << 20)
_DECODER = """
import base64, json, pickle, sys, zlib
blob = sys.stdin.buffer.read()
value = pickle.loads(zlib.decompress(base64.b64decode(blob)))
if isinstance(value, (bytes, bytearray)):
    value = value.decode()
if isinstance(value, str):
    value = json.loads(value)
sys.stdout.write(json.dumps(value))
"""


def decode_private(runner: Runner, blob: str) -> list[dict[str, Any]]:
    """Decode a private-tests blob inside the sandbox; the host only parses JSON."""
    if not blob:
        return []
    result = runner.run(_DECODER, "python", blob.encode(), DECODE_LIMITS)
    if result.status != "ok":
        raise ValidationError(
            "private_test_cases",
            f"could not be decoded ({result.status}): {result.stderr_text[-300:]}",
        )
    try:
        cases = json.loads(result.stdout)
    except ValueError as exc:
        raise ValidationError(
            "private_test_cases", f"decoded to something that is not JSON: {exc}"
        ) from exc
    if not isinstance(cases, list):
        raise ValidationError("private_test_cases", "must decode to a list of tests")
    return cases


def _cases(raw: Any) -> list[dict[str, Any]]:
    cases = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(cases, list):
        raise ValidationError("public_test_cases", "must be a list of tests")
    return cases


def _test(i: int, case: dict[str, Any], func: str) -> TestCase:
    if case.get("testtype") == "functional":
        if not func:
            raise ValidationError("metadata.func_name", "functional tests need the function's name")
        args = [json.loads(line) for line in str(case["input"]).splitlines() if line.strip()]
        return TestCase(
            kind="call",
            name=f"call-{i}",
            options={"fn_name": func, "args": args, "tuples_as_lists": True},
            expected_value=json.loads(case["output"]),
        )
    return TestCase(
        kind="stdio", name=f"stdio-{i}", input=str(case["input"]), expected=str(case["output"])
    )


def problem(rec: dict[str, Any], runner: Runner | None = None) -> Problem:
    meta = rec.get("metadata") or {}
    meta = json.loads(meta) if isinstance(meta, str) else meta
    func = str(meta.get("func_name", ""))
    cases = _cases(rec.get("public_test_cases") or "[]")
    if runner is not None:
        cases += decode_private(runner, rec.get("private_test_cases") or "")
    return Problem(
        str(rec.get("question_id", rec.get("id", ""))),
        [_test(i, c, func) for i, c in enumerate(cases)],
        limits=LIMITS,
        metadata={
            "prompt": rec.get("question_content", ""),
            "starter_code": rec.get("starter_code", ""),
        },
    )


def load(records: list[dict[str, Any]], runner: Runner | None = None) -> list[Problem]:
    """Public tests only without a ``runner``; with one, the private tests too."""
    return [problem(r, runner) for r in records]
