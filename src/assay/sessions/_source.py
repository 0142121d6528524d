"""What a session's source can do, found out once: the session takes these capabilities
explicitly (``Capabilities``) instead of probing the object it was given at each use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..runner import Runner
from ..sandbox import RunRequest, Sandbox
from ..telemetry import NullWriter, RecordWriter
from ..types import ExecResult, Placement


@dataclass(frozen=True, slots=True)
class Capabilities:
    """A session source's capabilities: ``execute`` runs a sandbox request (the one door
    into its sandbox); ``runner`` is its runner (None for a bare ``Sandbox``); ``slot_call``
    runs a step in the executor's order (None: on the caller's thread); ``admitted`` is the
    same admission awaited (``LocalExecutor.admitted``: the service's no-thread step path);
    ``records`` is where its sessions are recorded (None: nowhere)."""

    execute: Callable[[RunRequest], ExecResult]
    runner: Runner | None = None
    slot_call: Callable[..., Any] | None = None
    admitted: Callable[..., Any] | None = None
    records: RecordWriter | None = None


def capabilities_of(source: object) -> Capabilities:
    """The capabilities of a ``Runner``, a ``Sandbox`` or an executor (a ``LocalExecutor``:
    its runner, its step admission and its record writer); ValidationError for anything
    else."""
    if isinstance(source, Runner):
        return Capabilities(source.execute, source)
    if isinstance(source, Sandbox):
        return Capabilities(source.execute)
    runner = getattr(source, "runner", None)
    if not isinstance(runner, Runner):
        raise ValidationError("source", "give a Runner, a LocalExecutor or a Sandbox")
    call, admitted = getattr(source, "call", None), getattr(source, "admitted", None)
    records = getattr(source, "records", None)
    return Capabilities(
        runner.execute,
        runner,
        call if callable(call) else None,
        admitted if callable(admitted) else None,
        records
        if isinstance(records, RecordWriter) and not isinstance(records, NullWriter)
        else None,
    )


def held_runner(
    runner: Runner | None, placement: Placement
) -> tuple[Runner | None, Callable[[], None] | None]:
    """The runner a session's sandbox runs on and what to call when the session ends: the
    source's own (nothing held), or, for an image or another tier, that runner, held."""
    if placement == Placement():
        return runner, None
    if runner is None:
        field = "image" if placement.image is not None else "isolation"
        raise ValidationError(field, "a session in an image or tier needs a Runner source")
    return runner.hold(placement)
