"""How a session runs its sandbox request on the source it was given."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ValidationError
from ..runner import Runner
from ..sandbox import RunRequest, Sandbox
from ..types import ExecResult


def executor_of(source: object) -> Callable[[RunRequest], ExecResult]:
    """How to run a sandbox request on a ``Runner``, a ``LocalExecutor`` (its runner) or a
    ``Sandbox``: the runner's ``execute``, the one door into its sandbox."""
    if isinstance(source, (Runner, Sandbox)):
        return source.execute
    runner = getattr(source, "runner", None)
    if isinstance(runner, Runner):
        return runner.execute
    raise ValidationError("source", "give a Runner, a LocalExecutor or a Sandbox")
