"""``AsyncSession``: a :class:`Session` for asyncio code (each call runs off the loop)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from .session import Session
from .types import SessionLike

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def off_loop(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[Any, P], Awaitable[R]]:
    """The async twin of a session's method (``Session``'s, or a remote session's): same
    parameters, same documentation, run in a worker thread on the wrapper's ``session`` so
    the event loop never waits on the sandbox."""

    @functools.wraps(method)
    async def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        # The session's own method: a cluster's session (a subclass) forwards its calls.
        bound = getattr(self.session, method.__name__)
        return await asyncio.to_thread(bound, *args, **kwargs)

    return call


class AsyncSession:
    """Async face of a :class:`Session`; make one with ``await AsyncSession.create(...)``.

    >>> async with await AsyncSession.create(runner) as s:         # doctest: +SKIP
    ...     print((await s.exec("echo hi")).stdout)
    """

    def __init__(self, session: SessionLike) -> None:
        """``session``: a ``Session``, or a remote one (``assay.client``)."""
        self.session = session
        self.id = session.id

    @classmethod
    async def create(
        cls, source: object, files: Mapping[str, str | bytes] | None = None, **kwargs: Any
    ) -> AsyncSession:
        return cls(await asyncio.to_thread(Session, source, files, **kwargs))

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    exec = off_loop(Session.exec)
    write_file = off_loop(Session.write_file)
    read_file = off_loop(Session.read_file)
    list_files = off_loop(Session.list_files)
    delete_file = off_loop(Session.delete_file)
    download_tar = off_loop(Session.download_tar)
    upload_tar = off_loop(Session.upload_tar)
    run_cell = off_loop(Session.run_cell)
    close = off_loop(Session.close)
    verify = off_loop(Session.verify)
    episode_rewards = off_loop(Session.episode_rewards)

    async def fork(self) -> AsyncSession:
        return AsyncSession(await asyncio.to_thread(self.session.fork))

    def info(self) -> dict[str, Any]:
        return self.session.info()
