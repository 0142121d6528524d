"""CPU time against a reference CPU time (e.g. the reference solution's, on the same tests).

CPU time, not wall time, so a busy machine does not change the reward (principle 4).
The measured time is the sum over the tests that ran; the reference should be the same sum
for the reference solution. The floor is per test (see ``defaults.EFFICIENCY_CPU_FLOOR_S``).
"""

from __future__ import annotations

from .. import defaults
from ..judge import Judgement, Problem, Submission
from ._relative import check_floor, reference, relative
from .base import RewardResult, unusable

#: ``Problem.metadata`` key read when no reference is passed to the constructor.
METADATA_KEY = "reference_cpu_s"


class EfficiencyReward:
    """min(1, reference CPU / CPU) for accepted submissions, 0 otherwise.

    ``reference_cpu_s`` is the total CPU seconds of a reference run over the problem's
    tests; if not given, ``problem.metadata["reference_cpu_s"]`` is used.
    """

    def __init__(
        self,
        reference_cpu_s: float | None = None,
        floor_s: float = defaults.EFFICIENCY_CPU_FLOOR_S,
    ) -> None:
        self.reference_cpu_s = reference_cpu_s
        self.floor_s = check_floor("floor_s", floor_s)

    def __call__(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        bad = unusable(judgement)
        if bad is not None:
            return bad
        ref = reference(self.reference_cpu_s, problem, METADATA_KEY)
        cpu = sum(t.cpu_s for t in judgement.tests)
        floor = self.floor_s * max(1, len(judgement.tests))
        return relative(judgement, cpu, ref, floor, ("cpu_s", "reference_cpu_s"), "s")
