"""Go: compiled by Debian's go command inside the sandbox, in GOPATH mode, offline.

One language name, two program kinds, told apart from the source (:func:`is_test_file`):

* a program (``package main`` with ``func main()``) is built with ``go build`` and run;
* a test file (it imports ``"testing"`` and declares ``func TestXxx(t *testing.T)`` or
  ``TestMain``) is built with ``go test -c`` into a test binary and run. This is how
  HumanEval-X runs Go (``go test main_test.go``), so its tasks need no special case.

There are no Go modules in the sandbox (no network, no module cache), so the build runs in
GOPATH mode: first the GOPATH prepared by ``scripts/prepare_go.sh`` (testify and its
dependencies already compiled, so a test build links them instead of compiling them), then
Debian's ``/usr/share/gocode`` sources. ``GOCACHE`` lives on the run's tmpfs and dies with it,
so nothing one build writes can reach another. ``go vet`` (which ``go test`` normally runs) is
off: it is a linter, not a test, and would vet the whole standard library on every build.
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache

from .. import defaults
from ..types import Limits
from .base import Build, Program

GO = "/usr/bin/go"
#: GOPATH with prebuilt testify (scripts/prepare_go.sh); used when present.
PREPARED_GOPATH = "/usr/local/lib/assay/go"
#: Debian's Go library sources (golang-*-dev packages).
DEBIAN_GOPATH = "/usr/share/gocode"
#: Build cache on the sandbox tmpfs: the go command insists on a writable one.
GOCACHE = "/tmp/gocache"

#: The go command, compile and link each run several threads: a test build needs about 16
#: tasks (it fails at 12), so 64 leaves room for a loaded machine. Measured peaks: ~75 MiB,
#: ~1 CPU s with the prepared GOPATH and ~5 CPU s compiling testify from source.
COMPILE_LIMITS = Limits(
    time_s=defaults.COMPILE_TIME_S,
    memory_mb=defaults.COMPILE_MEMORY_MB,
    processes=64,
    output_bytes=1 << 20,
    disk_mb=256,
)

#: Settings every build uses. The prepared archives are only reused if these match the ones
#: they were installed with (scripts/prepare_go.sh): keep both in step.
BUILD_ENV: tuple[str, ...] = (
    "GO111MODULE=off",
    f"GOPATH={PREPARED_GOPATH}:{DEBIAN_GOPATH}",
    f"GOCACHE={GOCACHE}",
    "GOENV=off",
    "GOFLAGS=",
    "GOPROXY=off",
    "GOTOOLCHAIN=local",
    "CGO_ENABLED=1",
    "GOMAXPROCS=2",
)
#: One scheduler thread: CPU time (the verdict) then does not depend on how many cores the
#: garbage collector spreads over, and the thread count stays far below ``Limits.processes``.
RUN_ENV: tuple[str, ...] = ("GOMAXPROCS=1",)

_TEST_FUNC = re.compile(
    r"^func\s+(?:Test[^a-z]\w*\s*\(\s*\w+\s+\*\s*testing\.T\s*\)|TestMain\s*\()", re.MULTILINE
)
_TESTING_IMPORT = re.compile(r'^\s*(?:import\s+)?(?:\w+\s+)?"testing"', re.MULTILINE)


def is_test_file(source: bytes) -> bool:
    """Whether ``source`` is a ``_test.go`` file: imports "testing" and declares a test."""
    text = source.decode("utf-8", errors="replace")
    return bool(_TESTING_IMPORT.search(text) and _TEST_FUNC.search(text))


@lru_cache(maxsize=1)
def _version() -> str:
    try:
        out = subprocess.run([GO, "version"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    return out.stdout.decode(errors="replace").strip() or "unknown"


def _prepared_identity() -> str:
    try:
        with open(os.path.join(PREPARED_GOPATH, "identity")) as fh:
            return fh.read().strip()
    except OSError:
        return "unprepared"


class Go:
    """``go build`` for programs, ``go test -c`` for test files; runs with GOMAXPROCS=1."""

    name = "go"
    extensions: tuple[str, ...] = (".go",)

    def toolchain(self) -> str:
        # Library sources and archives are part of the result: the prepared GOPATH's identity
        # (toolchain + source hash) changes whenever prepare_go.sh rebuilt it.
        return f"go:{_version()}:{_prepared_identity()}"

    def build(self, source: bytes) -> Build:
        env = ["/usr/bin/env", *BUILD_ENV, GO]
        flags = ["-buildvcs=false", "-ldflags=-s -w"]
        if is_test_file(source):
            argv = [*env, "test", "-c", "-vet=off", *flags, "-o", "main.test", "main_test.go"]
            return Build(argv, [("main_test.go", source, 0o644)], "main.test", COMPILE_LIMITS)
        argv = [*env, "build", *flags, "-o", "main", "main.go"]
        return Build(argv, [("main.go", source, 0o644)], "main", COMPILE_LIMITS)

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        assert artifact is not None
        env = ["/usr/bin/env", *RUN_ENV]
        if is_test_file(source):
            # -test.paniconexit0, as `go test` passes it: os.Exit(0) inside a test is a failure.
            argv = [*env, f"{defaults.WORK_DIR}/main.test", "-test.paniconexit0"]
            return Program("exec", argv, [("main.test", artifact, 0o755)])
        return Program("exec", [*env, f"{defaults.WORK_DIR}/main"], [("main", artifact, 0o755)])
