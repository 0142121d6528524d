"""Claim: a Go program cannot read host secrets or the project's files, nor list private host
directories, nor write to host paths.

The program tries ``/etc/shadow``, ``/root`` and ``/home``, this very test file, canary files
the test plants in ``/root`` and the host's ``/tmp``, and the same through ``/proc/1/root``;
then it tries to create ``/usr/bin/assay-pwned`` and to append to ``/etc/passwd``. Every
attempt must fail inside, and nothing may appear on the host.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import Limits
from assay.languages.go import GO

if not os.access(GO, os.X_OK):
    pytest.skip(f"no Go toolchain at {GO} (apt-get install golang-go)", allow_module_level=True)

CANARY_DIRS = ("/root", "/tmp")
PWNED = "/usr/bin/assay-pwned"

PROBE = r"""package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var reads, writes []string
	in := bufio.NewScanner(os.Stdin)
	target := &reads
	for in.Scan() {
		if in.Text() == "--writes" {
			target = &writes
			continue
		}
		*target = append(*target, in.Text())
	}
	out := map[string]string{}
	for _, path := range reads {
		if entries, err := os.ReadDir(path); err == nil {
			out[path] = fmt.Sprintf("LISTED %d entries", len(entries))
		} else if data, err := os.ReadFile(path); err == nil {
			out[path] = "READ " + string(data[:min(len(data), 60)])
		} else {
			out[path] = "denied: " + err.Error()
		}
	}
	for _, path := range writes {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			f.WriteString("pwned\n")
			f.Close()
			out["write "+path] = "WROTE"
		} else {
			out["write "+path] = "denied: " + err.Error()
		}
	}
	data, _ := json.Marshal(out)
	fmt.Println(string(data))
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
"""


@pytest.fixture
def canaries() -> Iterator[list[str]]:
    """Uniquely named canary files in host directories, removed afterwards."""
    tag = f"assay-canary-{uuid.uuid4().hex}"
    planted = []
    for directory in CANARY_DIRS:
        if os.path.isdir(directory):
            path = os.path.join(directory, tag)
            Path(path).write_text(tag)
            planted.append(path)
    try:
        yield planted
    finally:
        for path in planted:
            os.unlink(path)


def test_go_cannot_touch_host_files(runner, canaries: list[str]) -> None:  # type: ignore[no-untyped-def]
    this_file = str(Path(__file__).resolve())
    reads = [
        "/etc/shadow",
        "/root",
        "/root/.bashrc",
        "/home",
        "/proc/1/root/etc/shadow",
        this_file,
        *canaries,
        *(f"/proc/1/root{path}" for path in canaries),
    ]
    writes = [PWNED, "/etc/passwd"]
    stdin = "\n".join([*reads, "--writes", *writes]) + "\n"
    try:
        result = runner.run(PROBE, "go", stdin, Limits(time_s=5))
        assert result.status == "ok", (result.status, result.stderr[-800:])
        outcomes = json.loads(result.stdout)
        assert len(outcomes) == len(reads) + len(writes), outcomes
        opened = {path: o for path, o in outcomes.items() if not o.startswith("denied")}
        assert opened == {}, f"host files were reachable: {opened}"
        assert not os.path.exists(PWNED)
        assert b"pwned" not in Path("/etc/passwd").read_bytes()
    finally:
        if os.path.exists(PWNED):
            os.unlink(PWNED)
