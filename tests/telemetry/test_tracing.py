"""OpenTelemetry spans of real jobs, caught by the SDK's in-memory exporter: batch -> job
(with its queue wait) -> compile and test runs; nothing at all when tracing is off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay import Limits, Problem, Submission, TestCase
from assay.executor import LocalExecutor
from assay.scheduler import RuntimeEstimator
from assay.telemetry import MemoryWriter, tracing

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="pip install 'assay[otel]'")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

ADD = Problem(
    "add",
    [TestCase(input="1 2\n", expected="3\n"), TestCase(input="5 5\n", expected="10\n")],
    Limits(time_s=2, memory_mb=256),
)
C_ADD = '#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}\n'


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.configure_tracing(provider)
    yield memory
    tracing.configure_tracing(None)


def executor(runner) -> LocalExecutor:  # type: ignore[no-untyped-def]
    return LocalExecutor(
        runner, slots=1, records=MemoryWriter(), estimator=RuntimeEstimator(), cache=False
    )


def test_a_batch_traces_its_jobs_queue_waits_compiles_and_runs(
    runner,  # type: ignore[no-untyped-def]
    exporter: InMemorySpanExporter,
) -> None:
    with executor(runner) as ex:
        results = ex.run(
            [
                Submission(ADD, "print(sum(map(int, input().split())))"),
                Submission(ADD, C_ADD + f"// {id(exporter)}\n", "c"),  # a fresh compile
            ],
            caller="trainer-1",
        )
    assert [r.verdict for r in results] == ["accepted", "accepted"]
    spans = exporter.get_finished_spans()
    by_name: dict[str, list] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (batch,) = by_name["assay.batch"]
    assert batch.parent is None and batch.attributes["assay.caller"] == "trainer-1"
    assert batch.attributes["assay.jobs"] == 2
    jobs = by_name["assay.job"]
    assert len(jobs) == 2
    assert all(j.parent.span_id == batch.context.span_id for j in jobs)
    assert {j.attributes["assay.language"] for j in jobs} == {"python", "c"}
    assert all(j.attributes["assay.verdict"] == "accepted" for j in jobs)
    job_ids = {j.context.span_id: j for j in jobs}
    waits = by_name["assay.queue_wait"]
    assert {w.parent.span_id for w in waits} == set(job_ids)
    for w in waits:
        assert w.start_time == job_ids[w.parent.span_id].start_time
    runs = by_name["assay.run"]
    assert len(runs) == 4 and all(r.parent.span_id in job_ids for r in runs)  # 2 tests each
    (compile_span,) = by_name["assay.compile"]
    assert job_ids[compile_span.parent.span_id].attributes["assay.language"] == "c"
    assert all(s.context.trace_id == batch.context.trace_id for s in spans)
    for j in jobs:  # children lie within their job
        kids = [s for s in spans if s.parent is not None and s.parent.span_id == j.context.span_id]
        assert all(j.start_time <= k.start_time and k.end_time <= j.end_time for k in kids)


def test_tracing_is_off_by_default(runner) -> None:  # type: ignore[no-untyped-def]
    memory = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))  # a provider nobody configured
    assert not tracing.enabled()
    with executor(runner) as ex:
        ex.run([Submission(ADD, "print(3)")])
    assert memory.get_finished_spans() == ()


def test_otlp_endpoint_turns_tracing_on_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert tracing.configure_from_env() is False and not tracing.enabled()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    try:
        assert tracing.configure_from_env() is True and tracing.enabled()
    finally:
        tracing.configure_tracing(None)


def test_call_and_script_test_runs_nest_under_their_job(
    runner,  # type: ignore[no-untyped-def]
    exporter: InMemorySpanExporter,
) -> None:
    """The judge runs a call test's program on the job's thread (its supervisor serves the
    channel) and a script test's program and harness on its background threads; every run
    is a child of the job, with the test kind."""
    calls = Problem(
        "double",
        [
            TestCase(kind="call", options={"fn_name": "f", "args": [2]}, expected_value=4),
            TestCase(kind="call", options={"fn_name": "f", "args": [5]}, expected_value=10),
        ],
        Limits(time_s=2, memory_mb=256),
    )
    script = Problem(
        "double-check",
        [TestCase(kind="script", code="assert f(3) == 6\n")],
        Limits(time_s=2, memory_mb=256),
    )
    code = "def f(x):\n    return 2 * x\n"
    with executor(runner) as ex:
        results = ex.run([Submission(calls, code), Submission(script, code + "# 2\n")])
    assert [r.verdict for r in results] == ["accepted", "accepted"]
    spans = exporter.get_finished_spans()
    jobs = {s.context.span_id: s for s in spans if s.name == "assay.job"}
    runs = [s for s in spans if s.name == "assay.run"]
    kinds = sorted(r.attributes["assay.test_kind"] for r in runs)
    assert kinds == ["call", "harness", "script"]  # one run serves both call tests
    for r in runs:
        job = jobs[r.parent.span_id]
        assert job.start_time <= r.start_time and r.end_time <= job.end_time
        assert r.context.trace_id == job.context.trace_id
    by_kind = {r.attributes["assay.test_kind"]: jobs[r.parent.span_id] for r in runs}
    assert by_kind["call"].attributes["assay.job_id"] == results[0].job_id
    assert by_kind["script"].attributes["assay.job_id"] == results[1].job_id


def test_in_thread_is_the_function_itself_without_a_current_span(
    exporter: InMemorySpanExporter,
) -> None:
    def fn() -> int:
        return 1

    assert tracing.in_thread("assay.run", fn) is fn  # no job span current in this thread
    tracing.configure_tracing(None)
    assert tracing.in_thread("assay.run", fn) is fn
