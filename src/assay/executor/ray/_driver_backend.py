"""The driver's backend: it describes, splits and merges jobs, and runs none."""

from __future__ import annotations

from ... import languages
from ..backend import _Common, _Fingerprints
from ..types import Execution, Job


class DriverBackend(_Common):
    """Describes jobs exactly as the sandbox backend does (same cache keys and estimate
    keys), so the scheduler's view does not depend on where jobs run."""

    def __init__(self) -> None:
        super().__init__(self._toolchain)
        self.fingerprint = _Fingerprints()
        self._toolchains: dict[str, str] = {}

    def _toolchain(self, language: str) -> str:
        # Asked for every job; a toolchain's version does not change under a running driver
        # (the nodes run the same image), so it is looked up once per language.
        version = self._toolchains.get(language)
        if version is None:
            version = self._toolchains[language] = languages.get(language).toolchain()
        return version

    def execute(self, job: Job, stop_on_failure: bool) -> Execution:
        raise RuntimeError("the Ray driver runs no job itself: its node agents do")
