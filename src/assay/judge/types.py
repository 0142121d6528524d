"""Problems, tests, submissions and verdicts (names are public API, see DESIGN.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .. import languages
from ..errors import ValidationError
from ..types import Failure, Isolation, Limits, Network, Placement, check_network

TestKind = Literal["stdio", "call", "script", "pytest"]
Verdict = Literal[
    "accepted",
    "wrong_answer",
    Failure,
    # A model's response that holds no code at all (only prose or empty fences): reward 0,
    # nothing is run. Given where responses are read (``assay eval``), never by the judge.
    "no_code",
]


#: A run's status that is not ``ok`` decides its test's verdict directly.
STATUS_TO_VERDICT: dict[str, Verdict] = {
    "runtime_error": "runtime_error",
    "time_limit": "time_limit",
    "memory_limit": "memory_limit",
    "output_limit": "output_limit",
    "compile_error": "compile_error",
    "sandbox_error": "sandbox_error",
}


@dataclass(frozen=True, slots=True, weakref_slot=True)  # the judge caches by test object
class TestCase:
    """One test. ``stdio``: ``input`` -> ``expected`` output (compared by ``compare``)."""

    __test__ = False  # not a pytest class

    kind: TestKind = "stdio"
    input: str = ""
    expected: str | None = None
    compare: str = "tokens"
    name: str = ""
    weight: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)
    #: For ``script`` tests: the trusted test program (``options`` may add ``setup`` code run
    #: first, e.g. the problem's prompt, and a ``call`` expression run last, e.g.
    #: ``check(candidate)``).
    code: str = ""
    #: For ``call`` tests: the expected return value (plain builtin types). Set
    #: ``options={"fn_name": ..., "args": [...]}``, and ``atol``/``rtol`` for floats.
    expected_value: Any = None


@dataclass(frozen=True, slots=True)
class Problem:
    id: str
    tests: list[TestCase]
    limits: Limits = field(default_factory=Limits)
    checker: str | None = None
    references: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The task image the tests run on (an id, id prefix or name in the image store);
    #: None: the host's root.
    image: str | None = None
    #: ``"loopback"``: every run of the problem's tests has its own network namespace with
    #: ``lo`` up (a test that starts a server on 127.0.0.1 and talks to it); nothing outside
    #: the run is reachable either way. ``"none"`` (the default): no sockets but Unix ones.
    network: Network = "none"
    #: The isolation tier the tests run in (``"default"``, ``"gvisor"``); None: the
    #: runner's own.
    isolation: Isolation | None = None

    def __post_init__(self) -> None:
        Placement(self.image, self.isolation)  # checks both
        check_network(self.network)
        if not self.tests:
            # A problem without tests would accept anything: an error, never a verdict.
            raise ValidationError("tests", f"problem {self.id!r} has no tests")

    @property
    def placement(self) -> Placement:
        """Where the problem's tests run: its image and tier."""
        return Placement(self.image, self.isolation)


@dataclass(frozen=True, slots=True)
class Submission:
    problem: Problem
    code: str | bytes
    language: str = "python"

    def __post_init__(self) -> None:
        # An alias (``js``, ``py``, ``c++``) is stored as the language's own name, so the
        # judge, rewards and records never see two spellings of one language.
        object.__setattr__(self, "language", languages.canonical(self.language))


@dataclass(frozen=True, slots=True)
class TestResult:
    __test__ = False

    index: int
    verdict: Verdict
    cpu_s: float = 0.0
    wall_s: float = 0.0
    peak_memory_bytes: int = 0
    message: str = ""


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on a submission. ``total`` is the problem's number of tests, whether or
    not each ran (with stop-on-failure the tests after the first failure have no result);
    ``passed`` is how many of them were accepted. If not given, ``total`` is ``len(tests)``."""

    verdict: Verdict
    tests: list[TestResult]
    reward: float | None
    reason: str = ""
    #: False when the submission was never judged because the problem itself could not be
    #: (e.g. its expected outputs could not be computed): then ``verdict`` is sandbox_error,
    #: ``reward`` None and ``tests`` empty. Read this field, not the reason's wording.
    judged: bool = True
    total: int = -1

    def __post_init__(self) -> None:
        if self.total < 0:
            object.__setattr__(self, "total", len(self.tests))

    @property
    def passed(self) -> int:
        return sum(t.verdict == "accepted" for t in self.tests)
