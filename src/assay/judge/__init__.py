"""The judge layer: problems, tests, trusted comparison, verdicts."""

from .judge import Judge, combine, validate
from .types import Judgement, Problem, Submission, TestCase, TestKind, TestResult, Verdict

__all__ = [
    "Judge",
    "Judgement",
    "Problem",
    "Submission",
    "TestCase",
    "TestKind",
    "TestResult",
    "Verdict",
    "combine",
    "validate",
]
