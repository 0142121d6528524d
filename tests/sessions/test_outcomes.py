"""Test ids matched as SWE-bench's harness stores them (cut at the first whitespace)."""

from __future__ import annotations

from assay.sessions._outcomes import statuses, swe_key
from assay.sessions._verify_run import TestRun


def _run(**outcomes: str) -> TestRun:
    return TestRun(outcomes={k.replace("__", " "): (v, "") for k, v in outcomes.items()})


def test_swe_key_cuts_at_whitespace_and_newlines() -> None:
    assert swe_key("t.py::test_x[a b]") == "t.py::test_x[a"
    assert swe_key("t.py::test_x[big\nint]") == "t.py::test_x[big"
    assert swe_key("t.py::test_x[c]") == "t.py::test_x[c]"


def test_exact_and_cut_ids_match() -> None:
    run = TestRun(
        outcomes={
            "t.py::test_x[a b]": ("passed", ""),
            "t.py::test_x[c]": ("xfailed", ""),
            "t.py::test_y": ("skipped", ""),
        }
    )
    got = statuses(["t.py::test_x[a b]", "t.py::test_x[a", "t.py::test_x[c]", "t.py::test_y"], run)
    assert got == {
        "t.py::test_x[a b]": "passed",
        "t.py::test_x[a": "passed",
        "t.py::test_x[c]": "passed",
        "t.py::test_y": "skipped",
    }


def test_one_failure_under_a_cut_id_fails_it() -> None:
    run = TestRun(outcomes={"t.py::x[a b]": ("passed", ""), "t.py::x[a c]": ("failed", "")})
    assert statuses(["t.py::x[a", "t.py::missing"], run) == {
        "t.py::x[a": "failed",
        "t.py::missing": "missing",
    }
