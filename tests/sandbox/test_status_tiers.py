"""Same input, same status, on every tier: a table of edge programs (CPU and memory just
under and over the limit, sleepers, memory bombs and a caught MemoryError, the file-size
limit, an output flood, signals, threads) run on the default tier, the gVisor tier and rooted
at a task image. Each tier decides through ``sandbox/_inside/status.py``; this checks that
the facts each measures lead there to the same status, for Python programs and executables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _tiers import tier_runner

from assay import Limits, Runner

pytestmark = pytest.mark.slow

#: (name, language, source, limits, expected status)
EDGES: list[tuple[str, str, str, dict[str, Any], str]] = [
    ("clean exit", "python", "print(1)", {}, "ok"),
    ("exit code", "python", "raise SystemExit(3)", {}, "runtime_error"),
    (
        "CPU just under",
        "python",
        "import time\nwhile time.process_time() < 0.35: pass\nprint('done')",
        {"time_s": 1.0},
        "ok",
    ),
    ("CPU over", "python", "while True: pass", {"time_s": 0.3}, "time_limit"),
    (
        "two spinning threads",
        "python",
        "import threading\n"
        "def spin():\n    while True: pass\n"
        "for _ in range(2): threading.Thread(target=spin, daemon=True).start()\n"
        "spin()",
        {"time_s": 0.3},
        "time_limit",
    ),
    (
        "sleeper at the backstop",
        "python",
        "import time; time.sleep(60)",
        {"time_s": 0.2},
        "time_limit",
    ),
    (
        "sleeper, explicit wall",
        "python",
        "import time; time.sleep(60)",
        {"time_s": 5.0, "wall_s": 0.5},
        "time_limit",
    ),
    (
        # Computing at ~15 % of a core past the default backstop (4 s), at a pace that
        # reaches its CPU limit within the stretch: runs on to finish (~4.3 s), on every
        # tier (gVisor's 10 ms CPU ticks included: the program counts in the same ticks).
        "still computing at the backstop",
        "python",
        "import time\n"
        "while time.process_time() < 0.65:\n"
        "    t = time.process_time()\n"
        "    while time.process_time() - t < 0.03: pass\n"
        "    time.sleep(0.17)\n"
        "print('done')",
        {"time_s": 1.0},
        "ok",
    ),
    (
        # 56 MiB of 64: the gVisor tier charged each run ~8 MiB of its sandbox's own on top
        # (the exec server's fork, the Sentry's bookkeeping) and said memory_limit.
        "memory just under",
        "python",
        "x = bytearray(56 << 20)\nprint(len(x))",
        {},
        "ok",
    ),
    ("memory just over", "python", "x = bytearray(66 << 20)\nprint(len(x))", {}, "memory_limit"),
    ("memory bomb", "python", "x = bytearray(400 << 20)\nprint(len(x))", {}, "memory_limit"),
    (
        # The gVisor tier capped a Python run's address space at its memory limit + 64 MiB:
        # the bomb was a MemoryError there, caught, and the run went on to "ok".
        "a bomb's MemoryError caught",
        "python",
        "try:\n    x = bytearray(400 << 20)\nexcept MemoryError:\n    print('caught')",
        {},
        "memory_limit",
    ),
    (
        # ... and 32 threads could not start under that cap (each stack reserves 64 MiB,
        # the run's RLIMIT_STACK here).
        "32 threads at once",
        "python",
        "from concurrent.futures import ThreadPoolExecutor\nimport time\n"
        "with ThreadPoolExecutor(32) as pool:\n    list(pool.map(time.sleep, [0.2] * 32))\n"
        "print('done')",
        {},
        "ok",
    ),
    (
        "1 GiB reserved, untouched",
        "python",
        "import mmap\nm = mmap.mmap(-1, 1 << 30)\nm[0] = 1\nprint('done')",
        {},
        "ok",
    ),
    ("impossible allocation", "python", "x = [0] * (10 ** 12)", {}, "memory_limit"),
    (
        "caught MemoryError",
        "python",
        "try:\n    x = [0] * (10 ** 12)\nexcept MemoryError:\n    print('caught')",
        {},
        "ok",
    ),
    (
        "file-size limit",
        "python",
        "open('big', 'wb').write(b'x' * (2 << 20))",
        {"file_bytes": 1 << 20},
        "runtime_error",  # Python ignores SIGXFSZ: the write fails (EFBIG), uncaught
    ),
    (
        "file-size limit, executable",
        "bash",
        "exec head -c 2097152 /dev/zero > big",
        {"file_bytes": 1 << 20},
        "output_limit",  # SIGXFSZ at its default: the program is killed by it
    ),
    (
        "output flood",
        "python",
        "import sys\nwhile True: sys.stdout.write('x' * 65536)",
        {"output_bytes": 1 << 16},
        "output_limit",
    ),
    (
        "killed by a signal",
        "python",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
        {},
        "runtime_error",
    ),
    ("segfault", "python", "import ctypes; ctypes.string_at(0)", {}, "runtime_error"),
    ("bash failure", "bash", "exit 7", {}, "runtime_error"),
]

_BASE = {"time_s": 2.0, "memory_mb": 64, "output_bytes": 1 << 20}


@pytest.fixture(scope="module", params=["default", "gvisor", "image", "gvisor-image"])
def tier(request: pytest.FixtureRequest) -> Iterator[tuple[Runner, str | None]]:
    with tier_runner(request.param) as t:
        yield t


@pytest.mark.parametrize(
    ("name", "language", "source", "limits", "expected"), EDGES, ids=[e[0] for e in EDGES]
)
def test_edge_program_status(
    tier: tuple[Runner, str | None],
    name: str,
    language: str,
    source: str,
    limits: dict[str, Any],
    expected: str,
) -> None:
    runner, image = tier
    res = runner.run(source, language, limits=Limits(**{**_BASE, **limits}), image=image)
    assert res.status == expected, (name, res.status, res.exit_code, res.signal, res.stderr[-300:])


@pytest.mark.parametrize(("size_mb", "expected"), [(64, "memory_limit"), (32, "ok")])
def test_input_files_against_the_memory_limit(
    tier: tuple[Runner, str | None], size_mb: int, expected: str
) -> None:
    """Files that take the run's whole memory (they live in its tmpfs, charged to it) are
    ``memory_limit`` on every tier, said before any sandbox is used: CI saw the gVisor tier
    answer ``ok`` once, when its sandbox freed memory of an earlier run meanwhile."""
    runner, image = tier
    res = runner.run(
        "import os\nprint(os.path.getsize('blob'))",
        files={"blob": b"z" * (size_mb << 20)},
        limits=Limits(**_BASE),
        image=image,
    )
    assert res.status == expected, (res.status, res.stderr[-300:])
    if expected == "memory_limit":
        assert res.stderr == b"assay: the input files do not fit the run's memory limit\n"
        assert res.wall_s == 0.0  # no sandbox was used
    else:
        assert res.stdout == f"{size_mb << 20}\n".encode()
