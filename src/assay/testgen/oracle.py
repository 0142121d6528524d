"""Run a reference (or many programs) on many inputs in the sandbox, never on the host.

One sandbox run evaluates a whole list of inputs (``_inside/oracle.py``): a call that loops
in Python code is stopped by a per-call CPU timer inside the run, and a run that dies on
an input anyway (a loop in C code such as a huge power, memory, a crash) is resumed after
that input, which is reported with the run's status. So a reference that loops or eats
memory on one input costs that input, never the batch.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from .. import defaults
from ..judge import values
from ..judge._trusted import with_codec
from ..runner import Runner
from ..sandbox import RunRequest
from ..types import ExecResult, Limits

Status = Literal["ok", "error", "contract", "timeout", "too_big", "crash"]

#: CPU seconds one call of the reference may take before its input is dropped as too slow.
CALL_S = 0.5
#: Limits of one oracle run: the whole batch shares them (a run that reaches them is resumed
#: after the input it was on).
RUN_LIMITS = Limits(time_s=60.0, wall_s=180.0, memory_mb=1024, output_bytes=256 << 20)
#: The second, fresh interpreter's hash seed (the warm one's is ``PYTHONHASHSEED=0``).
OTHER_HASH_SEED = 12345

_SCRIPT = resources.files("assay.testgen._inside").joinpath("oracle.py")


@dataclass(frozen=True, slots=True)
class Answer:
    """What the program did on one input. ``value`` is the decoded plain value when
    ``status == "ok"``; otherwise ``message`` says why the input has no answer."""

    status: Status
    value: Any = None
    message: str = ""
    cpu_s: float = 0.0
    lines: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class Kills:
    """Which inputs make one program answer other than expected (-1: it does not load)."""

    killed_by: tuple[int, ...]
    reason: str = ""


@functools.cache
def _script() -> bytes:
    """The oracle with the judge's value codec in front of it (it imports ``_assay_codec``)."""
    return with_codec(_SCRIPT.read_bytes())


def _run(
    runner: Runner, job: dict[str, Any], limits: Limits, hash_seed: int | None
) -> tuple[list[list[Any]], ExecResult]:
    files = [
        ("oracle.py", _script(), 0o444),
        ("job.json", json.dumps(job).encode(), 0o444),
    ]
    if hash_seed is None:  # the warm fork server (hash seed 0)
        req = RunRequest("python", ["/work/oracle.py"], files, limits=limits)
    else:  # a fresh interpreter, so the hash seed really differs
        env = {**defaults.SANDBOX_ENV, "PYTHONHASHSEED": str(hash_seed)}
        req = RunRequest("exec", [runner.python, "/work/oracle.py"], files, limits=limits, env=env)
    result = runner.execute(req)
    items = []
    for line in result.stdout.splitlines():
        try:
            items.append(json.loads(line))
        except (ValueError, RecursionError):  # cut short mid-line by the end of the run,
            break  # or nested past the parser's depth
    return items, result


def _why(result: ExecResult) -> str:
    if result.status == "ok":
        return "the run ended early"
    return result.status


def answers(
    runner: Runner,
    code: str,
    entry: str,
    inputs: list[list[Any]],
    contract: str = "",
    trace: bool = False,
    hash_seed: int | None = None,
    call_s: float = CALL_S,
    limits: Limits = RUN_LIMITS,
) -> list[Answer]:
    """One :class:`Answer` per input, from as few sandbox runs as the program allows.

    ``contract`` is Python source defining ``_assay_contract(*args)`` (run in the program's
    module, so it may use its helpers); an input it rejects gets status ``contract``."""
    encoded = [[values.encode(a) for a in args] for args in inputs]
    out: dict[int, Answer] = {}
    start = 0
    while start < len(inputs):
        job = {
            "mode": "answer",
            "sources": [code],
            "entry": entry,
            "contract": contract,
            "inputs": encoded,
            "start": start,
            "call_s": call_s,
            "trace": trace,
        }
        items, result = _run(runner, job, limits, hash_seed)
        if result.status == "sandbox_error":
            from ..errors import SandboxError

            raise SandboxError(f"oracle run failed: {result.stderr[-300:]!r}")
        at, ended = start, False
        for item in items:
            if item[0] == "at":
                at = item[1]
            elif item[0] == "r":
                _, i, status, value, cpu, lines = item
                out[i] = _answer(status, value, cpu, lines)
                at = i + 1
            elif item[0] == "end":
                ended = True
        if ended:
            break
        if at >= len(inputs):
            break
        if at not in out:
            out[at] = Answer("crash", message=f"the run died on this input ({_why(result)})")
        start = at + 1
    return [out.get(i, Answer("crash", message="not answered")) for i in range(len(inputs))]


def _answer(status: str, value: Any, cpu: float, lines: list[int]) -> Answer:
    if status != "ok":
        return Answer(status, message=str(value), cpu_s=float(cpu))  # type: ignore[arg-type]
    try:
        decoded = values.decode(value)
    except values.BadValue as exc:
        return Answer("error", message=f"unusable answer: {exc}", cpu_s=float(cpu))
    return Answer("ok", decoded, cpu_s=float(cpu), lines=frozenset(lines))


def kills(
    runner: Runner,
    programs: list[str],
    entry: str,
    inputs: list[list[Any]],
    expected: list[Any],
    caps: list[float],
    atol: float = 0.0,
    rtol: float = 0.0,
    max_kills: int = 0,
    limits: Limits = RUN_LIMITS,
) -> list[Kills]:
    """For each program, the inputs on which it answers other than ``expected`` (raises,
    times out past ``caps[i]`` CPU seconds, or returns a different value), at most
    ``max_kills`` of them (0: all). All programs share sandbox runs; a program that kills
    its run is charged with the input it was on and the next run starts after it."""
    job_base = {
        "mode": "kill",
        "sources": programs,
        "entry": entry,
        "inputs": [[values.encode(a) for a in args] for args in inputs],
        "expected": [values.encode(e) for e in expected],
        "caps": caps,
        "atol": atol,
        "rtol": rtol,
        "max_kills": max_kills,
    }
    out: dict[int, Kills] = {}
    start = 0
    while start < len(programs):
        items, result = _run(runner, {**job_base, "start": start}, limits, None)
        if result.status == "sandbox_error":
            from ..errors import SandboxError

            raise SandboxError(f"mutant run failed: {result.stderr[-300:]!r}")
        at: tuple[int, int] = (start, -1)
        ended = False
        for item in items:
            if item[0] == "at":
                at = (item[1], item[2])
            elif item[0] == "k":
                out[item[1]] = Kills(tuple(item[2]), item[3])
                at = (item[1] + 1, -1)
            elif item[0] == "end":
                ended = True
        if ended or at[0] >= len(programs):
            break
        m, i = at
        if m not in out:
            out[m] = Kills((i,), f"its run died ({_why(result)})")
        start = m + 1
    return [out.get(m, Kills((), "not run")) for m in range(len(programs))]
