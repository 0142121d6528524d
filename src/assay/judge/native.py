"""``script`` tests for languages other than Python: the test is compiled into the program.

The program is the test's ``setup`` + the submission + the test, put together by the
language's harness (:mod:`assay.judge.harness`). A per-run secret marker goes in on stdin;
the harness prints it after every check has passed. Accepted means: the run ended ``ok`` with
exit code 0 and its last line of output is this run's marker. The marker is fresh per run and
never part of the source, so compiled artefacts stay cacheable.

Limits of this design (documented, not hidden): the checks run in the submission's process.
Every harness takes the marker off stdin before the submission's code runs (C++ through a
priority constructor, Go through the first package variable, Rust, Java and JavaScript first
thing in the entry point), then closes stdin or points it at /dev/null, so a program cannot
read it back; one that scans its own memory for it still could.
Exiting early, printing fake pass lines, or catching assertion failures cannot forge a pass.
"""

from __future__ import annotations

import secrets

from ..runner import Runner
from ..types import Limits, Network
from . import harness
from .types import STATUS_TO_VERDICT, TestCase, TestResult


def run_native_scripts(
    runner: Runner,
    code: str,
    language: str,
    tests: list[tuple[int, TestCase]],
    limits: Limits,
    network: Network = "none",
) -> list[TestResult]:
    assemble = harness.get(language)
    out: list[TestResult] = []
    for index, test in tests:
        program = assemble(code, test.code, str(test.options.get("setup", "")))
        marker = "assay-pass-" + secrets.token_hex(16)
        result = runner.run(program, language, marker + "\n", limits, network=network)
        common = {
            "cpu_s": result.cpu_s,
            "wall_s": result.wall_s,
            "peak_memory_bytes": result.peak_memory_bytes,
        }
        if result.status != "ok":
            tail = (result.stderr or result.stdout).decode(errors="replace")[-800:]
            out.append(TestResult(index, STATUS_TO_VERDICT[result.status], message=tail, **common))  # type: ignore[arg-type]
            if result.status == "compile_error":
                break
            continue
        lines = result.stdout.rstrip(b"\n").split(b"\n")
        if result.exit_code == 0 and lines[-1].strip() == marker.encode():
            out.append(TestResult(index, "accepted", **common))  # type: ignore[arg-type]
        else:
            why = (
                f"exit code {result.exit_code}"
                if result.exit_code != 0
                else "the test harness never finished (the program ended before its checks did)"
            )
            out.append(TestResult(index, "wrong_answer", message=why, **common))  # type: ignore[arg-type]
    return out
