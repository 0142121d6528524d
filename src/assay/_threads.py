"""Async twins of blocking functions: same parameters and documentation, run in a worker
thread so an event loop never waits on a sandbox."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def threaded(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``fn`` as a coroutine function run by ``asyncio.to_thread``; as a class attribute
    (``run_async = threaded(run)``) it is a method like ``fn``."""

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    call.__doc__ = f"Async form of ``{fn.__name__}`` (run off the event loop)."
    return call
