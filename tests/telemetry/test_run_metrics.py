"""The executor's per-run metrics, from real sandboxed runs: durations by language and verdict,
time-limit and memory kills, and the security events the supervisor sees (a seccomp kill, an
output flood), plus the compile cache counters."""

from __future__ import annotations

import signal

from prometheus_client.parser import text_string_to_metric_families

from assay import Limits
from assay.executor import Execution, LocalExecutor, RunJob
from assay.judge import Judgement, TestResult
from assay.scheduler import RuntimeEstimator
from assay.telemetry import MemoryWriter, Metrics
from assay.telemetry.metrics import security_events
from assay.types import ExecResult

# Same foreign-ABI call as tests/security/test_compat_syscalls.py: seccomp kills it (SIGSYS).
INT80 = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    long ret;
    __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
    printf("RESULT %ld\n", ret);
    return 0;
}
"""


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_security_events_are_read_from_results() -> None:
    killed = Execution("runtime_error", None, result=ExecResult("runtime_error", signal=31))
    assert signal.SIGSYS == 31 and security_events(killed) == ["seccomp_kill"]
    flood = Execution("ok", None, result=ExecResult("ok", 0, stdout_truncated=True))
    assert security_events(flood) == ["output_flood"]
    judged = Execution(
        "output_limit",
        0.0,
        judgement=Judgement(
            "output_limit", [TestResult(0, "accepted"), TestResult(1, "output_limit")], 0.0
        ),
    )
    assert security_events(judged) == ["output_flood"]
    assert security_events(Execution("ok", None, result=ExecResult("ok", 0))) == []


def test_real_runs_are_counted_by_language_verdict_and_event(runner) -> None:  # type: ignore[no-untyped-def]
    metrics = Metrics()
    jobs = [
        RunJob("print(1)", "python", limits=Limits(time_s=2, memory_mb=256)),
        RunJob("while True: pass", "python", limits=Limits(time_s=0.3, memory_mb=256)),
        RunJob("x = bytearray(1 << 31)", "python", limits=Limits(time_s=2, memory_mb=128)),
        RunJob(
            "import sys\nsys.stdout.write('x' * 100_000)",
            "python",
            limits=Limits(time_s=2, memory_mb=256, output_bytes=1000),
        ),
        RunJob(INT80, "c", limits=Limits(time_s=2, memory_mb=256)),
    ]
    with LocalExecutor(
        runner, slots=2, records=MemoryWriter(), estimator=RuntimeEstimator(), metrics=metrics
    ) as ex:
        results = ex.run(jobs)
    statuses = [r.verdict for r in results]
    assert statuses[:3] == ["ok", "time_limit", "memory_limit"], statuses
    assert results[4].result is not None and results[4].result.signal == signal.SIGSYS
    got = samples(metrics)
    assert got[("assay_timeouts_total", (("language", "python"),))] == 1
    assert got[("assay_memory_kills_total", (("language", "python"),))] == 1
    assert got[("assay_security_events_total", (("kind", "seccomp_kill"),))] == 1
    assert got[("assay_security_events_total", (("kind", "output_flood"),))] == 1
    count = ("assay_job_duration_seconds_count", (("language", "python"), ("verdict", "ok")))
    assert got[count] >= 1
    assert got[("assay_sandbox_acquire_seconds_count", ())] == 5


def test_compile_cache_counters_are_exported_at_scrape() -> None:
    class Cache:
        hits, misses = 3, 2

    metrics = Metrics()
    metrics.bind_compile_cache(Cache())
    got = samples(metrics)
    assert got[("assay_compile_cache_hits_total", ())] == 3
    assert got[("assay_compile_cache_misses_total", ())] == 2
