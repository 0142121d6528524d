"""A session step awaited on an event loop, with no thread per step (the service's path).

``Session.exec`` blocks its caller's thread: in the service that was a hand-over from the
event loop to a session thread and back on every step, ~0.4 ms of a remote step's ~2 ms
budget (``benchmarks/sessions.py --only remote``). Here the same step is awaited: the
executor's admission completes a future (``LocalExecutor.admitted``), the request goes
out on the agent's socket (non-blocking, a line of JSON), and the reply is read when the
loop sees it readable. What would block goes to ``off_loop`` (a thread of the caller's
choosing): another step or call of the same session already running, a step slot or
memory that is not free now, a large stdin, a reply with a payload, and ending a session
whose agent stopped answering. The rules (one step at a time per session, the scheduler's
order, step slots, the session's records) are ``Session``'s own, by the same methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .. import defaults
from ..errors import SessionEnded, SessionFault
from ._args import exec_message
from ._channel import ChannelBroken

if TYPE_CHECKING:
    from .session import Session
    from .types import ExecStep, StepResult

__all__ = ["OffLoop", "awaitable", "exec_awaited"]

T = TypeVar("T")
#: Runs a blocking function on a thread and awaits its result.
OffLoop = Callable[[Callable[[], T]], Awaitable[T]]

#: A step whose stdin is up to this size goes out from the event loop (its request, the
#: stdin in base64, fits a socket buffer at once); a larger stdin is sent from a thread.
_SMALL = 48 << 10


def awaitable(session: object) -> bool:
    """Whether ``session`` steps can be awaited here (a local session on an executor that
    admits awaited calls, or on a runner: not a Ray node's, whose steps go elsewhere)."""
    from .session import Session

    if type(session) is not Session:
        return False
    return session._slot_call is None or session.capabilities.admitted is not None


async def exec_awaited(session: Session, step: ExecStep, *, off_loop: OffLoop[Any]) -> StepResult:
    """``session.step(step)``, awaited (see the module's docstring)."""
    if len(step.stdin) > _SMALL:
        result: StepResult = await off_loop(lambda: session.step(step))
        return result
    msg = exec_message(session.limits, step)
    started = time.time()
    reply: dict[str, Any] | SessionFault
    try:
        reply = await _step(session, msg, step.timeout_s + defaults.SESSION_REPLY_GRACE_S, off_loop)
    except SessionFault as fault:
        reply = fault
    except (ValueError, TypeError) as exc:
        raise session._malformed(exc) from None
    return session._stepped(reply, msg, started)


async def _step(
    session: Session, msg: dict[str, Any], timeout: float, off_loop: OffLoop[Any]
) -> dict[str, Any]:
    """``Session._step``: one step at a time, in the executor's order, counted."""
    async with _held(session._step_lock, off_loop):
        session.busy = True  # waiting for a slot is not idle: the reaper must leave it
        try:
            admitted = session.capabilities.admitted
            turn = (
                admitted(
                    priority=session.priority,
                    caller=session.caller,
                    estimate_s=session._step_s,
                    memory_mb=session.limits.memory_mb,
                    off_loop=off_loop,
                )
                if session._slot_call is not None and admitted is not None
                else contextlib.nullcontext()
            )
            async with turn:
                started = time.monotonic()
                reply: dict[str, Any] = {}
                try:
                    reply = await _call(session, msg, timeout, off_loop)
                    return reply
                finally:
                    session._count_step(reply, started)
        finally:
            session.busy = False
            session.last_used = time.monotonic()


async def _call(
    session: Session, msg: dict[str, Any], timeout: float, off_loop: OffLoop[Any]
) -> dict[str, Any]:
    """``Session._call_locked`` for a request without payload or descriptor."""
    async with _held(session._call_lock, off_loop):
        if session.end_reason is not None:
            raise SessionEnded(session.id, session.end_reason, session.end_detail)
        session.busy = True
        try:
            session._channel.send(msg, b"", timeout)
            reply, _ = await session._channel.recv_awaited(timeout, off_loop)
        except ChannelBroken as exc:
            broken = exc
            raise await off_loop(lambda: session._broken(broken)) from None
        finally:
            session.busy = False
            session.last_used = time.monotonic()
    return session._checked(reply)


@contextlib.asynccontextmanager
async def _held(lock: Any, off_loop: OffLoop[Any]) -> AsyncIterator[None]:
    """``with lock:`` from the event loop: taken at once if free, else waited for on a
    thread (another step or call of the session is running)."""
    if not lock.acquire(blocking=False):
        waiting = asyncio.ensure_future(off_loop(lock.acquire))
        try:
            await asyncio.shield(waiting)
        except asyncio.CancelledError:  # the thread still takes it: give it back then
            waiting.add_done_callback(lambda _: lock.release())
            raise
    try:
        yield
    finally:
        lock.release()
