"""The asyncio client: ``await AsyncSessionClient(url).session(...)`` is an ``AsyncSession``
on a remote session. Every call is the blocking client's, run off the event loop (as
``AsyncSession`` does for a local ``Session``): one HTTP implementation, two faces."""

from __future__ import annotations

import asyncio
from typing import Any

from ..sessions import AsyncSession
from ._sync import SessionClient


class AsyncSessionClient:
    """Async face of a :class:`SessionClient` (the same arguments).

    >>> async with AsyncSessionClient("http://127.0.0.1:8080") as client:   # doctest: +SKIP
    ...     async with await client.session() as s:
    ...         (await s.exec("echo hi")).stdout                           # b'hi\\n'
    """

    def __init__(self, url: str, token: str | None = None, **options: Any) -> None:
        self.client = SessionClient(url, token, **options)
        self.url = self.client.url

    async def session(self, *args: Any, **kwargs: Any) -> AsyncSession:
        """A new session (``SessionClient.session``'s arguments)."""
        return AsyncSession(await asyncio.to_thread(self.client.session, *args, **kwargs))

    async def close(self) -> None:
        await asyncio.to_thread(self.client.close)

    async def __aenter__(self) -> AsyncSessionClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
