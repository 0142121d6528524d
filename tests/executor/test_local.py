"""Scheduling rules of the local executor, on an in-memory backend (no sandbox)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from assay.errors import Overloaded, ValidationError
from assay.executor import Execution, InMemoryBackend, Job, JobResult, LocalExecutor, RunJob
from assay.judge import Judgement, Problem, Submission, TestCase, TestResult
from assay.scheduler import HIGH, LOW, RuntimeEstimator
from assay.telemetry import MemoryWriter


def problem(pid: str, duration: float = 0.0, tests: int = 1, verdict: str = "accepted") -> Problem:
    return Problem(
        pid,
        [TestCase("stdio", str(i), "x") for i in range(tests)],
        metadata={"duration": duration, "verdict": verdict},
    )


def judged(job: Job) -> Execution:
    assert isinstance(job, Submission)
    meta = job.problem.metadata
    time.sleep(meta["duration"])
    v = meta["verdict"]
    tests = [TestResult(i, v, wall_s=meta["duration"]) for i in range(len(job.problem.tests))]
    j = Judgement(v, tests, None if v == "sandbox_error" else float(v == "accepted"), v)
    return Execution(v, j.reward, v, judgement=j)


class Counting:
    def __init__(self, fn: Callable[[Job], Execution] = judged) -> None:
        self.fn = fn
        self.calls: list[Job] = []
        self.lock = threading.Lock()

    def __call__(self, job: Job) -> Execution:
        with self.lock:
            self.calls.append(job)
        return self.fn(job)


def executor(fn: Callable[[Job], Execution], **kw: object) -> LocalExecutor:
    kw.setdefault("slots", 2)
    kw.setdefault("records", MemoryWriter())
    kw.setdefault("estimator", RuntimeEstimator())
    return LocalExecutor(backend=InMemoryBackend(fn), **kw)  # type: ignore[arg-type]


def test_identical_submissions_run_once() -> None:
    fn = Counting(lambda j: (time.sleep(0.05), judged(j))[1])
    p = problem("p", 0.05)
    with executor(fn) as ex:
        results = ex.run([Submission(p, "print(1)") for _ in range(10)])
        assert len(fn.calls) == 1
        assert [r.verdict for r in results] == ["accepted"] * 10
        assert sum(r.cache_hit for r in results) == 9
        again = ex.run([Submission(p, "print(1)")])
        assert len(fn.calls) == 1 and again[0].cache_hit
        ex.run([Submission(p, "print(2)")])  # different code: runs
        assert len(fn.calls) == 2


def test_a_stop_on_failure_result_only_serves_the_same_request() -> None:
    # It lacks the tests after the first failure, so an all-tests request must run again.
    fn = Counting()
    p = problem("p", tests=3)
    with executor(fn) as ex:
        ex.run([Submission(p, "x")], stop_on_failure=True)
        assert not ex.run([Submission(p, "x")])[0].cache_hit
        assert len(fn.calls) == 2
        assert ex.run([Submission(p, "x")], stop_on_failure=True)[0].cache_hit
        assert ex.run([Submission(p, "x")])[0].cache_hit
        assert len(fn.calls) == 2


def test_cache_off_runs_every_job() -> None:
    fn = Counting()
    with executor(fn, cache=False) as ex:
        ex.run([Submission(problem("p"), "x") for _ in range(5)])
    assert len(fn.calls) == 5


def test_jobs_are_judged_on_threads_named_as_workers() -> None:
    # What a profiler and benchmarks/eval_throughput.py's per-thread CPU count as judging.
    names: list[str] = []

    def fn(job: Job) -> Execution:
        names.append(threading.current_thread().name)
        return judged(job)

    before = set(threading.enumerate())  # (another test's executor may not be gone yet)
    with executor(fn, slots=3, cache=False) as ex:
        ex.run([Submission(problem("p", 0.05), "x") for _ in range(6)])
        live = sorted(t.name for t in set(threading.enumerate()) - before)
    assert [n for n in live if n.startswith("assay-worker")] == [
        "assay-worker-0",
        "assay-worker-1",
        "assay-worker-2",
    ]
    assert set(names) <= set(live) and len(names) == 6


def test_full_queue_raises_overloaded_and_drops_nothing() -> None:
    gate = threading.Event()
    fn = Counting(lambda j: (gate.wait(5), judged(j))[1])
    with executor(fn, slots=1, max_queued=3, cache=False) as ex:
        first = ex.submit([Submission(problem(f"p{i}"), "x") for i in range(3)])
        with pytest.raises(Overloaded) as info:
            ex.submit([Submission(problem(f"q{i}"), "x") for i in range(3)])
        assert info.value.retry_after > 0
        gate.set()
        results = first.gather(10)
        assert [r.verdict for r in results] == ["accepted"] * 3
        assert {j.problem.id for j in fn.calls} == {"p0", "p1", "p2"}  # type: ignore[union-attr]
        # once drained, the queue takes work again
        assert ex.run([Submission(problem("later"), "x")])[0].verdict == "accepted"


def test_sandbox_error_is_retried_then_surfaced_with_no_reward() -> None:
    fn = Counting()
    with executor(fn, retries=2) as ex:
        [r] = ex.run([Submission(problem("broken", verdict="sandbox_error"), "x")])
    assert len(fn.calls) == 3 and r.attempts == 3
    assert r.verdict == "sandbox_error" and r.reward is None


def test_a_flaky_sandbox_error_recovers_on_retry() -> None:
    seen: list[int] = []

    def flaky(job: Job) -> Execution:
        seen.append(1)
        if len(seen) == 1:
            return Execution("sandbox_error", None, "zygote died")
        return judged(job)

    with executor(flaky) as ex:
        [r] = ex.run([Submission(problem("p"), "x")])
    assert r.verdict == "accepted" and r.reward == 1.0 and r.attempts == 2


def test_program_failures_are_never_retried() -> None:
    fn = Counting()
    with executor(fn) as ex:
        [r] = ex.run([Submission(problem("p", verdict="wrong_answer"), "x")])
    assert len(fn.calls) == 1 and r.verdict == "wrong_answer" and r.reward == 0.0


def test_deadline_returns_partial_results() -> None:
    with executor(judged, slots=1, cache=False, split=False) as ex:
        started = time.monotonic()
        handle = ex.submit(
            [Submission(problem(f"p{i}", 0.3), "x") for i in range(5)], deadline_s=0.45
        )
        results = handle.gather(5)
        elapsed = time.monotonic() - started
    assert elapsed < 1.0, "a deadline must not wait for the rest of the batch"
    done = [r for r in results if r.outcome == "done"]
    late = [r for r in results if r.outcome == "deadline"]
    assert 1 <= len(done) <= 2 and len(done) + len(late) == 5
    assert all(r.reward is None and r.verdict is None for r in late)
    assert all("deadline" in r.reason for r in late)


def test_cancel_ends_the_unfinished_jobs() -> None:
    with executor(judged, slots=1, cache=False) as ex:
        handle = ex.submit([Submission(problem(f"p{i}", 0.2), "x") for i in range(4)])
        time.sleep(0.05)
        assert handle.cancel() == 4
        results = handle.gather(1)
    assert {r.outcome for r in results} == {"cancelled"}


def makespan(ex: LocalExecutor, jobs: list[Job]) -> float:
    t0 = time.monotonic()
    ex.run(jobs)
    return time.monotonic() - t0


def test_longest_first_beats_fifo_on_a_heavy_tailed_batch() -> None:
    """20 short jobs then one long one, 2 slots: FIFO leaves the long one for last."""
    jobs: list[Job] = [Submission(problem(f"s{i}", 0.03), "x") for i in range(20)]
    jobs.append(Submission(problem("long", 0.6), "x"))
    spans = {}
    for order in ("fifo", "lpt"):
        est = RuntimeEstimator()
        with executor(judged, cache=False, split=False, order=order, estimator=est) as ex:
            ex.run(jobs)  # history: the estimates are learned from this run
            spans[order] = makespan(ex, jobs)
    lower_bound = max(0.6, (20 * 0.03 + 0.6) / 2)
    assert spans["lpt"] < spans["fifo"] - 0.15, spans
    assert spans["lpt"] < lower_bound * 1.25, spans


def test_higher_priority_overtakes_queued_work() -> None:
    order: list[str] = []
    gate = threading.Event()

    def fn(job: Job) -> Execution:
        assert isinstance(job, Submission)
        if job.problem.id == "blocker":
            gate.wait(5)
        order.append(job.problem.id)
        return judged(job)

    with executor(fn, slots=1, cache=False) as ex:
        first = ex.submit([Submission(problem("blocker"), "x")])
        time.sleep(0.05)
        low = ex.submit([Submission(problem(f"low{i}"), "x") for i in range(3)], priority=LOW)
        high = ex.submit([Submission(problem("high"), "x")], priority=HIGH)
        gate.set()
        for h in (first, low, high):
            h.gather(5)
    assert order == ["blocker", "high", "low0", "low1", "low2"]


def test_a_caller_with_a_small_batch_is_not_starved() -> None:
    order: list[str] = []
    gate = threading.Event()

    def fn(job: Job) -> Execution:
        assert isinstance(job, Submission)
        gate.wait(5)
        order.append(job.problem.id)
        return judged(job)

    with executor(fn, slots=1, cache=False) as ex:
        big = ex.submit([Submission(problem(f"a{i}"), "x") for i in range(40)], caller="a")
        small = ex.submit([Submission(problem(f"b{i}"), "x") for i in range(3)], caller="b")
        gate.set()
        big.gather(10), small.gather(10)
    last_b = max(i for i, pid in enumerate(order) if pid.startswith("b"))
    assert last_b < 10, order


def test_a_long_submission_is_spread_over_idle_slots() -> None:
    fn = Counting()
    with executor(fn, slots=2, cache=False) as ex:
        [r] = ex.run([Submission(problem("many", 0.1, tests=6), "x")])
    assert len(fn.calls) == 2
    sizes = sorted(len(j.problem.tests) for j in fn.calls)  # type: ignore[union-attr]
    assert sizes == [3, 3]
    assert r.judgement is not None
    assert [t.index for t in r.judgement.tests] == list(range(6))
    assert r.verdict == "accepted" and r.reward == 1.0


def test_split_parts_combine_failures_into_the_verdict() -> None:
    def fn(job: Job) -> Execution:
        assert isinstance(job, Submission)
        tests = job.problem.tests
        res = [
            TestResult(i, "wrong_answer" if t.input == "4" else "accepted")
            for i, t in enumerate(tests)
        ]
        v = "wrong_answer" if any(r.verdict != "accepted" for r in res) else "accepted"
        return Execution(v, None, v, judgement=Judgement(v, res, float(v == "accepted")))  # type: ignore[arg-type]

    with executor(fn, slots=2, cache=False, estimator=RuntimeEstimator(default_s=1)) as ex:
        [r] = ex.run([Submission(problem("p", tests=6), "x")])
    assert r.verdict == "wrong_answer" and r.reward == 0.0
    assert r.judgement is not None and r.judgement.tests[4].verdict == "wrong_answer"


def test_every_job_gets_a_record() -> None:
    records = MemoryWriter()
    with executor(judged, records=records) as ex:
        ex.run([Submission(problem("p"), "print(1)") for _ in range(3)], caller="trainer")
    assert len(records.records) == 3
    rec = records.records[0]
    assert rec["caller"] == "trainer" and rec["verdict"] == "accepted" and rec["code"] == "print(1)"
    assert sum(r["cache_hit"] for r in records.records) == 2
    assert {"queue_wait_s", "attempt", "worker", "toolchain", "limits", "tests"} <= set(rec)


def test_results_stream_async_and_to_callbacks() -> None:
    seen: list[JobResult] = []

    async def main(ex: LocalExecutor) -> list[int]:
        handle = ex.submit(
            [Submission(problem(f"p{i}", 0.01), "x") for i in range(5)], on_result=seen.append
        )
        return [r.index async for r in handle]

    with executor(judged) as ex:
        indices = asyncio.run(main(ex))
        gathered = asyncio.run(ex.run_async([Submission(problem("q"), "y")]))
    assert sorted(indices) == list(range(5)) and len(seen) == 5
    assert gathered[0].verdict == "accepted"


def test_a_failing_callback_does_not_lose_results() -> None:
    def boom(r: JobResult) -> None:
        raise RuntimeError("callback bug")

    with executor(judged) as ex:
        results = ex.submit([Submission(problem("p"), "x")], on_result=boom).gather(5)
    assert results[0].verdict == "accepted"


def test_bad_jobs_are_rejected_naming_the_job() -> None:
    with executor(judged) as ex:
        with pytest.raises(ValidationError, match=r"jobs\[1\]"):
            ex.submit([Submission(problem("p"), "x"), "not a job"])  # type: ignore[list-item]
        with pytest.raises(ValidationError, match=r"jobs\[0\].language"):
            ex.submit([RunJob("x", language="cobol")])


def test_metrics_follow_the_work() -> None:
    with executor(judged) as ex:
        ex.run([Submission(problem("p"), "x") for _ in range(3)])
        text = ex.metrics.render().decode()
    assert 'assay_jobs_submitted_total{language="python"} 3.0' in text
    assert 'assay_jobs_completed_total{language="python",verdict="accepted"} 3.0' in text
    assert "assay_cache_hits_total 2.0" in text
    assert "assay_queue_depth 0.0" in text


def test_an_empty_batch_is_done_at_once() -> None:
    with executor(judged) as ex:
        handle = ex.submit([])
        assert handle.done and handle.gather(0) == []


def test_a_run_job_with_bad_fields_is_rejected_naming_them() -> None:
    with executor(judged) as ex, pytest.raises(ValidationError, match=r"jobs\[0\].limits"):
        ex.submit([RunJob("print(1)", limits={"time_s": 1})])  # type: ignore[arg-type]


def _ran(job: Job) -> Execution:
    return Execution("ok", None, "exit code 0")


def test_plain_runs_are_never_shared_unless_they_ask() -> None:
    """A run's output is not a function of its code (random numbers, clocks): identical
    RunJobs each run, in one batch and across batches; ``RunJob(cache=True)`` opts in."""
    fn = Counting(_ran)
    with executor(fn) as ex:
        first = ex.run([RunJob("import random; print(random.random())") for _ in range(3)])
        again = ex.run([RunJob("import random; print(random.random())")])
        assert len(fn.calls) == 4
        assert not any(r.cache_hit for r in [*first, *again])
        opted = ex.run([RunJob("print(1)", cache=True) for _ in range(3)])
        assert len(fn.calls) == 5 and sum(r.cache_hit for r in opted) == 2


def test_every_result_has_its_own_record_and_id() -> None:
    """Cache hits and in-flight twins get ids of their own (so ``assay records`` counts
    every result) and name the job whose run they share in ``source_job_id``."""
    records = MemoryWriter()
    fn = Counting(lambda j: (time.sleep(0.05), judged(j))[1])
    with executor(fn, records=records) as ex:
        twins = ex.run([Submission(problem("p", 0.05), "print(1)") for _ in range(3)])
        cached = ex.run([Submission(problem("p", 0.05), "print(1)")])
    results = [*twins, *cached]
    ids = [r.job_id for r in results]
    assert len(set(ids)) == 4 and "cached" not in ids
    assert len(records.records) == 4
    assert {r["job_id"] for r in records.records} == set(ids)
    [ran] = [r for r in results if not r.cache_hit]
    assert ran.source_job_id == ran.job_id
    assert all(r.source_job_id == ran.job_id for r in results)
    assert sum(r["cache_hit"] for r in records.records) == 3


def test_stored_records_count_every_result(tmp_path: Path) -> None:
    """``assay records`` reads back one row per result: cache hits and in-flight twins no
    longer share an id (the store keeps one row per id and attempt)."""
    from assay.telemetry import query

    fn = Counting(lambda j: (time.sleep(0.05), judged(j))[1])
    with executor(fn, records=tmp_path / "records") as ex:
        results = ex.run([Submission(problem("p", 0.05), "print(1)") for _ in range(4)])
        results += ex.run([Submission(problem("p", 0.05), "print(1)")])
    assert len(fn.calls) == 1
    table = query(tmp_path / "records")
    assert table.num_rows == len(results) == 5
    assert sorted(table["job_id"].to_pylist()) == sorted(r.job_id for r in results)
    [ran] = [r.job_id for r in results if not r.cache_hit]
    assert table["source_job_id"].to_pylist() == [ran] * 5


def test_a_finished_batch_is_let_go_before_its_caller_has_the_results() -> None:
    # Whatever the worker does after delivering the last result (records, metrics; slow on a
    # loaded machine), the executor already holds neither the batch nor its results: a
    # stream of large outputs cannot pile up between two batches.
    class SlowRecords(MemoryWriter):
        def write(self, record):  # type: ignore[no-untyped-def]
            time.sleep(0.5)
            super().write(record)

    p = problem("p", 0.01)
    with executor(Counting(), records=SlowRecords()) as ex:
        handle = ex.submit([Submission(p, f"print({i})") for i in range(3)])
        handle.gather()
        assert handle.id not in ex._handles


def test_a_finished_batch_with_a_far_deadline_is_not_kept_until_it() -> None:
    import gc
    import weakref

    p = problem("p", 0.01)
    with executor(Counting()) as ex:
        handle = ex.submit([Submission(p, "print(1)")], deadline_s=3600)
        handle.gather()
        ref = weakref.ref(handle)
        del handle
        gc.collect()
        assert ref() is None, "the deadline thread keeps a finished batch (and its results)"


def test_batch_ids_are_128_random_bits() -> None:
    # Issue 26: they were a per-executor prefix and a counter, so one id told the next.
    with executor(Counting()) as ex:
        ids = [ex.submit([]).id for _ in range(4)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids), ids
    assert len({i[:8] for i in ids}) == len(ids), ids  # no shared prefix
    assert len({i[-8:] for i in ids}) == len(ids), ids  # nor a counter at the end


def test_a_problem_asking_for_loopback_is_not_served_from_one_without() -> None:
    """The network is part of what a result is of: one cached without loopback (where a
    server test fails) must not answer for the same problem with it."""
    fn = Counting(judged)
    p = problem("p", 0.0)
    with executor(fn) as ex:
        ex.run([Submission(p, "print(1)")])
        (looped,) = ex.run([Submission(replace(p, network="loopback"), "print(1)")])
        assert len(fn.calls) == 2 and not looped.cache_hit
