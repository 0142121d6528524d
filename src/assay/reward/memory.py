"""Peak memory against a reference peak (e.g. the reference solution's).

The measured peak is the largest over the tests (read from the cgroup by the trusted side),
since memory, unlike time, does not add up across separate runs.
"""

from __future__ import annotations

from .. import defaults
from ..judge import Judgement
from ._relative import RelativeReward, check_floor

#: ``Problem.metadata`` key read when no reference is passed to the constructor.
METADATA_KEY = "reference_peak_memory_bytes"


class MemoryReward(RelativeReward):
    """min(1, reference peak / peak) for accepted submissions, 0 otherwise.

    ``reference_peak_memory_bytes`` defaults to
    ``problem.metadata["reference_peak_memory_bytes"]``.
    """

    metadata_key = METADATA_KEY
    names = ("peak_memory_bytes", "reference_peak_memory_bytes")
    unit = "B"

    def __init__(
        self,
        reference_peak_memory_bytes: float | None = None,
        floor_bytes: float = defaults.MEMORY_FLOOR_BYTES,
    ) -> None:
        self.reference_peak_memory_bytes = reference_peak_memory_bytes
        self.floor_bytes = check_floor("floor_bytes", floor_bytes)
        super().__init__(reference_peak_memory_bytes, self.floor_bytes)

    def measure(self, judgement: Judgement) -> tuple[float, float]:
        return float(
            max((t.peak_memory_bytes for t in judgement.tests), default=0)
        ), self.floor_bytes
