"""How a session runs its sandbox request on the source it was given."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ValidationError
from ..runner import Runner
from ..sandbox import RunRequest, Sandbox
from ..types import ExecResult, Placement


def executor_of(source: object) -> Callable[[RunRequest], ExecResult]:
    """How to run a sandbox request on a ``Runner``, a ``LocalExecutor`` (its runner) or a
    ``Sandbox``: the runner's ``execute``, the one door into its sandbox."""
    if isinstance(source, (Runner, Sandbox)):
        return source.execute
    runner = getattr(source, "runner", None)
    if isinstance(runner, Runner):
        return runner.execute
    raise ValidationError("source", "give a Runner, a LocalExecutor or a Sandbox")


def held_runner(
    source: object, placement: Placement
) -> tuple[Runner | None, Callable[[], None] | None]:
    """The runner a session's sandbox runs on and what to call when the session ends: the
    source's own (nothing held), or, for an image or another tier, that runner, held."""
    runner = source if isinstance(source, Runner) else getattr(source, "runner", None)
    if placement == Placement():
        return (runner if isinstance(runner, Runner) else None), None
    if not isinstance(runner, Runner):
        field = "image" if placement.image is not None else "isolation"
        raise ValidationError(field, "a session in an image or tier needs a Runner source")
    return runner.hold(placement)
