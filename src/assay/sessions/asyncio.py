"""``AsyncSession``: a :class:`Session` for asyncio code (each call runs off the loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from .session import Session
from .types import CellResult, StepResult


class AsyncSession:
    """Async face of a :class:`Session`; make one with ``await AsyncSession.create(...)``.

    >>> async with await AsyncSession.create(runner) as s:         # doctest: +SKIP
    ...     print((await s.exec("echo hi")).stdout)
    """

    def __init__(self, session: Session) -> None:
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

    async def exec(
        self,
        command: str,
        timeout_s: float = 30.0,
        idle_timeout_s: float | None = None,
        stdin: str | bytes = b"",
    ) -> StepResult:
        return await asyncio.to_thread(self.session.exec, command, timeout_s, idle_timeout_s, stdin)

    async def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        await asyncio.to_thread(self.session.write_file, path, content, mode)

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self.session.read_file, path)

    async def list_files(self, directory: str = ".") -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.session.list_files, directory)

    async def delete_file(self, path: str) -> None:
        await asyncio.to_thread(self.session.delete_file, path)

    async def download_tar(self, directory: str = ".") -> bytes:
        return await asyncio.to_thread(self.session.download_tar, directory)

    async def upload_tar(self, data: bytes, directory: str = ".") -> None:
        await asyncio.to_thread(self.session.upload_tar, data, directory)

    async def run_cell(self, code: str, timeout_s: float = 30.0) -> CellResult:
        return await asyncio.to_thread(self.session.run_cell, code, timeout_s)

    async def fork(self) -> AsyncSession:
        return AsyncSession(await asyncio.to_thread(self.session.fork))

    async def verify(self, diagnosis: object = None) -> Any:
        """``Session.verify`` off the event loop (a ``VerifyResult``)."""
        return await asyncio.to_thread(self.session.verify, diagnosis)

    async def close(self) -> None:
        await asyncio.to_thread(self.session.close)

    def info(self) -> dict[str, Any]:
        return self.session.info()
