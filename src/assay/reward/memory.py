"""Peak memory against a reference peak (e.g. the reference solution's).

The measured peak is the largest over the tests (read from the cgroup by the trusted side),
since memory, unlike time, does not add up across separate runs.
"""

from __future__ import annotations

from .. import defaults
from ..judge import Judgement, Problem, Submission
from ._relative import check_floor, reference, relative
from .base import RewardResult, unusable

#: ``Problem.metadata`` key read when no reference is passed to the constructor.
METADATA_KEY = "reference_peak_memory_bytes"


class MemoryReward:
    """min(1, reference peak / peak) for accepted submissions, 0 otherwise.

    ``reference_peak_memory_bytes`` defaults to
    ``problem.metadata["reference_peak_memory_bytes"]``.
    """

    def __init__(
        self,
        reference_peak_memory_bytes: float | None = None,
        floor_bytes: float = defaults.MEMORY_FLOOR_BYTES,
    ) -> None:
        self.reference_peak_memory_bytes = reference_peak_memory_bytes
        self.floor_bytes = check_floor("floor_bytes", floor_bytes)

    def __call__(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        bad = unusable(judgement)
        if bad is not None:
            return bad
        ref = reference(self.reference_peak_memory_bytes, problem, METADATA_KEY)
        peak = float(max((t.peak_memory_bytes for t in judgement.tests), default=0))
        return relative(
            judgement,
            peak,
            ref,
            self.floor_bytes,
            ("peak_memory_bytes", "reference_peak_memory_bytes"),
            "B",
        )
