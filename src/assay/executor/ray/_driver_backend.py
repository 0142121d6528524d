"""The driver's backend: it describes, splits and merges jobs, and runs none."""

from __future__ import annotations

from ... import languages
from ..backend import _Common, _Fingerprints
from ..types import Execution, Job


class DriverBackend(_Common):
    """Describes jobs exactly as the sandbox backend does (same cache keys and estimate
    keys), so the scheduler's view does not depend on where jobs run."""

    def __init__(self) -> None:
        super().__init__(lambda lang: languages.get(lang).toolchain())
        self.fingerprint = _Fingerprints()

    def execute(self, job: Job, stop_on_failure: bool) -> Execution:
        raise RuntimeError("the Ray driver runs no job itself: its node agents do")
