"""``--format assay``: a Problem written out and read back, exactly."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from assay import Limits
from assay.errors import ValidationError
from assay.formats import assay_suite, load
from assay.judge import Problem, TestCase


def problem() -> Problem:
    args = [(1, 2), {3, 1, 2}, b"\x00x", 10**5000, [frozenset({"a", "b"})], {"k": (None, True)}]
    return Problem(
        "p/1",
        [
            TestCase(
                kind="call",
                name="t",
                options={"fn_name": "f", "args": args, "atol": 1e-6},
                expected_value=(float("nan"), 1.5, {2, 1}),
            ),
            TestCase(input="1 2\n", expected="3\n"),
        ],
        limits=Limits(time_s=2.0, memory_mb=512),
        references=["def f(*a):\n    pass\n"],
        metadata={"prompt": "x", "quality": {"mutation_score": 1.0}},
    )


def test_round_trip_keeps_types_and_is_deterministic(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = problem()
    line = assay_suite.dumps(p)
    assert line == assay_suite.dumps(problem())  # sets written in a fixed order
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n")
    (back,) = load(path, "assay")
    assert back.limits == p.limits and back.references == p.references
    assert back.metadata == p.metadata
    call = back.tests[0]
    assert call.options["args"] == p.tests[0].options["args"]
    assert [type(a) for a in call.options["args"]] == [tuple, set, bytes, int, list, dict]
    nan, f, s = call.expected_value
    assert math.isnan(nan) and f == 1.5 and s == {1, 2}
    assert back.tests[1] == p.tests[1]
    assert (back.image, back.network) == (None, "none")
    assert '"network"' not in line and '"image"' not in line  # older suites keep their bytes


def test_image_and_network_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = replace(problem(), image="py311", network="loopback")
    path = tmp_path / "s.jsonl"
    path.write_text(assay_suite.dumps(p) + "\n")
    (back,) = load(path, "assay")
    assert (back.image, back.network) == ("py311", "loopback")


def test_bad_rows_name_the_field() -> None:
    with pytest.raises(ValidationError, match="format"):
        assay_suite.load([{"id": "x", "tests": []}])
    row = assay_suite.dump_problem(problem())
    row["tests"][0]["expected_value"] = ["?", 1]
    with pytest.raises(ValidationError, match="expected_value"):
        assay_suite.load([row])
    row = assay_suite.dump_problem(problem())
    row["tests"][0]["bogus"] = 1
    with pytest.raises(ValidationError, match=r"tests\[0\]"):
        assay_suite.load([row])
