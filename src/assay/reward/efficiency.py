"""CPU time against a reference CPU time (e.g. the reference solution's, on the same tests).

CPU time, not wall time, so a busy machine does not change the reward (principle 4).
The measured time is the sum over the tests that ran; the reference should be the same sum
for the reference solution. The floor is per test (see ``defaults.EFFICIENCY_CPU_FLOOR_S``).
"""

from __future__ import annotations

from .. import defaults
from ..judge import Judgement
from ._relative import RelativeReward, check_floor

#: ``Problem.metadata`` key read when no reference is passed to the constructor.
METADATA_KEY = "reference_cpu_s"
FLOOR_S = defaults.EFFICIENCY_CPU_FLOOR_S


class EfficiencyReward(RelativeReward):
    """min(1, reference CPU / CPU) for accepted submissions, 0 otherwise.

    ``reference_cpu_s`` is the total CPU seconds of a reference run over the problem's
    tests; if not given, ``problem.metadata["reference_cpu_s"]`` is used.
    """

    metadata_key = METADATA_KEY
    names = ("cpu_s", "reference_cpu_s")
    unit = "s"

    def __init__(self, reference_cpu_s: float | None = None, floor_s: float = FLOOR_S) -> None:
        self.reference_cpu_s = reference_cpu_s
        self.floor_s = check_floor("floor_s", floor_s)
        super().__init__(reference_cpu_s, self.floor_s)

    def measure(self, judgement: Judgement) -> tuple[float, float]:
        cpu = sum(t.cpu_s for t in judgement.tests)
        return cpu, self.floor_s * max(1, len(judgement.tests))
