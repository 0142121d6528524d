"""Fork's copy: the parent's agent sends its workspace into a pipe whose other end the new
session's agent unpacks from (each gets its end with the request, by SCM_RIGHTS).

No byte passes through the trusted process, and the parent packs while the child is still
starting: on two cores the two halves overlap.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def fork_via_pipe(
    pack: Callable[[int], object],
    start: Callable[[], T],
    unpack: Callable[[T, int], object],
    discard: Callable[[T], None],
) -> T:
    """``start()`` a child and ``unpack`` into it what ``pack`` writes; each of ``pack`` and
    ``unpack`` owns (and closes) the pipe end it is given. On any failure the child is
    discarded and the first error raised; the parent only ever sees a failed request."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # fewer wake-ups; 1 MiB is pipe-max-size's default
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 1 << 20)
    made: list[T] = []
    failed: list[BaseException] = []

    def child_side() -> None:
        fd = read_end
        try:
            child = start()
            made.append(child)
            fd = -1
            unpack(child, read_end)
        except BaseException as exc:  # re-raised in the caller's thread
            failed.append(exc)
            if fd >= 0:
                os.close(fd)  # the parent then sees a closed pipe, not a stalled one

    starter = threading.Thread(target=child_side, name="assay-fork")
    starter.start()
    try:
        pack(write_end)
    except BaseException:
        starter.join()
        for child in made:
            discard(child)
        raise
    starter.join()
    if failed:
        for child in made:
            discard(child)
        raise failed[0]
    return made[0]
