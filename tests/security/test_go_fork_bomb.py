"""Claim: a Go fork bomb (goroutines that each pin an OS thread and spawn copies of the
program with os/exec) is held by the run's pids limit and leaves no process behind.

Threads count against ``Limits.processes`` like processes do, so the Go runtime itself runs
out of threads (``newosproc`` fails with EAGAIN and the runtime aborts) or ``fork`` fails with
EAGAIN; either way the run ends with an ordinary verdict, never ``sandbox_error``, and once
``run()`` returns no process of the run remains on the host (every copy of the program names
itself with the test's tag), and the next run on the same slot sees no trace of it.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from assay import Limits
from assay.languages.go import GO

if not os.access(GO, os.X_OK):
    pytest.skip(f"no Go toolchain at {GO} (apt-get install golang-go)", allow_module_level=True)

PROCESSES = 16

BOMB = r"""package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Runs on the main thread before main: names the process (its /proc/<pid>/comm) TAG; every
// copy started below runs this too.
func init() {
	runtime.LockOSThread()
	name := []byte("TAG\x00")
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0)
}

func main() {
	var started, failed int64
	var firstErr atomic.Value
	for i := 0; i < 64; i++ {
		go func() {
			runtime.LockOSThread() // every goroutine holds an OS thread of its own
			for {
				cmd := exec.Command("/proc/self/exe", "child")
				if err := cmd.Start(); err != nil {
					if atomic.AddInt64(&failed, 1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				atomic.AddInt64(&started, 1)
			}
		}()
	}
	if len(os.Args) == 1 {
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "started=%d failed=%d first=%v\n",
			atomic.LoadInt64(&started), atomic.LoadInt64(&failed), firstErr.Load())
	}
	select {}
}
"""

AFTER = r"""
import json, os
others = [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]
print(json.dumps(others))
"""


def test_go_fork_bomb_is_contained(pool_runner, host) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=2, memory_mb=256, processes=PROCESSES)
    tag = host.new_tag()
    started = time.monotonic()
    result = pool_runner.run(BOMB.replace("TAG", tag), "go", limits=limits)
    elapsed = time.monotonic() - started

    survivors = host.leftovers(pool_runner, tag)
    assert survivors == [], f"processes survived the run: {survivors}"

    assert result.status in ("runtime_error", "time_limit"), (result.status, result.stderr[-800:])
    # The pids limit is what stopped it: a thread or a process could not be created.
    assert b"errno=11" in result.stderr or b"resource temporarily unavailable" in result.stderr, (
        result.stderr[-800:]
    )
    # The run's own wall time: ``elapsed`` also holds the build of this run's unique source
    # (``go build`` took most of 18 s under CI's load), which is not the bomb's doing.
    assert result.wall_s < limits.effective_wall_s + 2, (
        f"the run took {result.wall_s:.2f}s ({elapsed:.2f}s with its build)"
    )

    after = pool_runner.run(AFTER, limits=Limits(time_s=1))
    assert after.status == "ok", after
    assert json.loads(after.stdout) == [], f"the next run sees other processes: {after.stdout!r}"
