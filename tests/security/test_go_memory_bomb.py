"""Claim: a Go program that allocates without end is stopped at its memory limit.

The cgroup caps the whole run, every thread of it: an endless allocation ends as
``memory_limit`` with ``peak_memory_bytes`` close to, never above, the limit, promptly, and
the pool serves the next run normally. Allocating from many goroutines at once (several OS
threads, with the garbage collector running concurrently) does not get around the cap.
"""

from __future__ import annotations

import os
import time

import pytest

from assay import Limits
from assay.languages.go import GO

if not os.access(GO, os.X_OK):
    pytest.skip(f"no Go toolchain at {GO} (apt-get install golang-go)", allow_module_level=True)

MEMORY_MB = 128

# Pages are filled with non-zero bytes so they are really committed, not lazily mapped.
BOMB = r"""package main

import (
	"runtime"
	"sync"
)

var mu sync.Mutex
var hoard [][]byte

func grab(seed int) {
	for {
		block := make([]byte, 4<<20)
		for i := range block {
			block[i] = byte(seed + i%251 + 1)
		}
		mu.Lock()
		hoard = append(hoard, block)
		mu.Unlock()
	}
}

func main() {
	runtime.GOMAXPROCS(WORKERS)
	for i := 1; i < WORKERS; i++ {
		go grab(i)
	}
	grab(0)
}
"""


@pytest.mark.parametrize("workers", [1, 4], ids=["one-goroutine", "four-goroutines"])
def test_go_memory_bomb_hits_memory_limit(runner, workers: int) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=5, memory_mb=MEMORY_MB)
    cap = MEMORY_MB << 20
    code = BOMB.replace("WORKERS", str(workers))
    runner.request(code, "go")  # compiles (cached), so the timed run is the program alone
    started = time.monotonic()
    result = runner.run(code, "go", limits=limits)
    elapsed = time.monotonic() - started

    assert result.status == "memory_limit", (result.status, result.stderr[-2000:])
    assert 0.8 * cap <= result.peak_memory_bytes <= cap + (1 << 20), result.peak_memory_bytes
    assert elapsed < limits.time_s + 2, f"run took {elapsed:.2f}s"

    after = runner.run(
        'package main\nimport "fmt"\nfunc main() { fmt.Println(45) }\n',
        "go",
        limits=Limits(time_s=1, memory_mb=MEMORY_MB),
    )
    assert (after.status, after.stdout) == ("ok", b"45\n"), after
