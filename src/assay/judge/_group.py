"""What each kind's test runner takes: the tests of one kind of one submission, run together."""

from __future__ import annotations

from dataclasses import dataclass

from ..runner import Runner
from ..types import Limits, Network
from .types import TestCase


@dataclass(frozen=True, slots=True)
class TestGroup:
    """``tests`` (with their indices in the problem) of ``code``, run on ``runner`` under
    ``limits``. With ``stop_on_failure`` the tests after the first failure are not run and
    have no result."""

    __test__ = False  # not a pytest class

    runner: Runner
    code: bytes
    tests: list[tuple[int, TestCase]]
    limits: Limits
    stop_on_failure: bool = False
    network: Network = "none"
