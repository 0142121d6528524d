"""AsyncSession: the same session from asyncio code."""

from __future__ import annotations

import asyncio

from assay import AsyncSession
from assay.sessions import SessionLimits


def test_async_session_steps_and_fork(runner) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        limits = SessionLimits(memory_mb=128, disk_mb=16)
        async with await AsyncSession.create(runner, {"x": "1"}, limits=limits) as s:
            await s.exec("export N=5; cd /tmp")
            assert (await s.exec("echo $N $PWD")).stdout == b"5 /tmp\n"
            await s.write_file("y", b"2")
            assert await s.read_file("y") == b"2"
            child = await s.fork()
            try:
                both = await asyncio.gather(child.exec("cat /work/x"), s.exec("cat /work/y"))
                assert [r.stdout for r in both] == [b"1", b"2"]
            finally:
                await child.close()
            assert s.info()["steps"] == 3

    asyncio.run(main())
