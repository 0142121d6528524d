"""What goes into the executor and what comes out of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..judge import Judgement, Submission
from ..types import ExecResult, Limits, Placement, check_isolation

#: ``done``: the job ran (or its twin did) and ``verdict`` says how it went. ``deadline``:
#: the batch's deadline passed first. ``cancelled``: the batch was cancelled first. In the
#: last two cases ``verdict`` and ``reward`` are None: the trainer decides what to do.
Outcome = Literal["done", "deadline", "cancelled"]


@dataclass(frozen=True, slots=True)
class RunJob:
    """A plain run (no tests): the program's :class:`ExecResult` is the result."""

    code: str | bytes
    language: str = "python"
    stdin: str | bytes = b""
    limits: Limits = field(default_factory=Limits)
    files: tuple[tuple[str, bytes], ...] = ()
    #: Work-dir paths whose contents come back in ``result.files`` (SandboxFusion's
    #: ``fetch_files``).
    collect: tuple[str, ...] = ()
    #: A run's output is not a function of its code (random numbers, clocks), so a plain
    #: run is never answered from the result cache or shared with an identical run in
    #: flight unless this is True (for programs known to be deterministic).
    cache: bool = False
    #: The task image to run on (an id, id prefix or name in the image store); None: the
    #: host's root.
    image: str | None = None
    #: ``"default"`` or ``"gvisor"`` (the hardened tier); None: the runner's own tier.
    isolation: str | None = None

    @property
    def placement(self) -> Placement:
        """Where the run is: its image and tier (checked: ``ValidationError`` names the
        field)."""
        tier = check_isolation(self.isolation) if self.isolation is not None else None
        return Placement(self.image, tier)


Job = Submission | RunJob


@dataclass(frozen=True, slots=True)
class Execution:
    """What a backend reports for one job (or one part of a split job)."""

    verdict: str
    reward: float | None
    reason: str = ""
    judgement: Judgement | None = None
    result: ExecResult | None = None
    #: Time spent outside the program itself (sandbox start-up, judging), when measurable.
    overhead_s: float | None = None

    @property
    def cpu_s(self) -> float:
        """The run's CPU seconds, or the sum over the judged tests."""
        return float(self._measured("cpu_s", sum))

    @property
    def wall_s(self) -> float:
        return float(self._measured("wall_s", sum))

    @property
    def peak_memory_bytes(self) -> int:
        """The run's peak, or the largest over the judged tests (memory does not add up)."""
        return int(self._measured("peak_memory_bytes", lambda xs: max(xs, default=0)))

    def _measured(self, name: str, combine: Callable[[list[float]], float]) -> float:
        if self.result is not None:
            return float(getattr(self.result, name))
        tests = self.judgement.tests if self.judgement is not None else []
        return combine([getattr(t, name) for t in tests])

    def approx_bytes(self) -> int:
        """Roughly what this result holds in memory (outputs, files, messages)."""
        n = 256 + len(self.reason)
        if self.result is not None:
            r = self.result
            n += len(r.stdout) + len(r.stderr) + sum(len(p) + len(c) for p, c in r.files.items())
        if self.judgement is not None:
            n += len(self.judgement.reason)
            n += sum(96 + len(t.message) for t in self.judgement.tests)
        return n


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    """One job's result in a batch, in the order the jobs were submitted (``index``).

    Every result has its own ``job_id``; one answered without a run of its own (the result
    cache, or an identical job in flight) has ``cache_hit`` True and names the job that ran
    in ``source_job_id`` (its own id otherwise).
    """

    index: int
    job_id: str
    outcome: Outcome
    #: The judge's verdict for a :class:`~assay.judge.Submission`, the run status for a
    #: :class:`RunJob`; None for ``deadline``/``cancelled``.
    verdict: str | None = None
    #: None whenever the result is not a usable training signal (sandbox_error, deadline).
    reward: float | None = None
    reason: str = ""
    judgement: Judgement | None = None
    result: ExecResult | None = None
    #: Attempts made (more than 1 only after sandbox_error retries).
    attempts: int = 0
    #: True when the result came from the cache or an identical job in flight.
    cache_hit: bool = False
    #: The job whose run produced this result (``job_id`` itself unless ``cache_hit``).
    source_job_id: str = ""
    queue_wait_s: float = 0.0
    #: Seconds of slot time the job used (summed over its parts when split).
    run_s: float = 0.0
    worker: str = ""
