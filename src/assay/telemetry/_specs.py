"""The list of every metric Assay exports: name, type, help text, labels, buckets.

One list, so the README table, the Grafana dashboard notes and the registries are generated
from it rather than kept in sync by hand. Naming follows Prometheus practice: ``assay_`` prefix,
base units, counters end in ``_total``, and no per-job or per-problem labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["METRICS", "SPECS", "MetricSpec"]

#: Seconds a job may wait: from "picked at once" to "queued behind a long batch".
_QUEUE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: Seconds a job runs: programs are judged within seconds, whole test suites within minutes.
_RUN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
#: Seconds to get a sandbox: a warm fork takes 1-2 ms, a cold start tens of milliseconds.
_START_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1)
#: Seconds an agent session lives: a one-shot notebook to a four-hour episode (the TTL cap).
_LIFETIME_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400)


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric: exposition name, Prometheus type, help text, labels, buckets."""

    name: str
    kind: Literal["counter", "histogram", "gauge"]
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


#: Every metric an executor exports; the README table is generated from this.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "assay_jobs_submitted_total", "counter", "Jobs accepted into the queue.", ("language",)
    ),
    MetricSpec(
        "assay_jobs_completed_total",
        "counter",
        "Jobs finished, by verdict; 'deadline' and 'cancelled' for jobs that never ran.",
        ("language", "verdict"),
    ),
    MetricSpec(
        "assay_jobs_rejected_total",
        "counter",
        "Jobs refused by admission control because the queue was full.",
    ),
    MetricSpec(
        "assay_queue_wait_seconds",
        "histogram",
        "Time from submission until a worker started the job.",
        buckets=_QUEUE_BUCKETS,
    ),
    MetricSpec(
        "assay_job_run_seconds",
        "histogram",
        "Wall time of a job from start to verdict (compile and all tests).",
        buckets=_RUN_BUCKETS,
    ),
    MetricSpec(
        "assay_sandbox_start_seconds",
        "histogram",
        "Time a job spent in the sandbox layer beyond its programs' own run time (fork, set-up, teardown).",
        buckets=_START_BUCKETS,
    ),
    MetricSpec(
        "assay_cache_hits_total", "counter", "Jobs answered from the result cache without a run."
    ),
    MetricSpec("assay_cache_misses_total", "counter", "Jobs looked up in the cache and run."),
    MetricSpec(
        "assay_retries_total", "counter", "Job attempts retried after an infrastructure fault."
    ),
    MetricSpec(
        "assay_sandbox_errors_total",
        "counter",
        "Infrastructure failures (sandbox_error): our fault, never the program's.",
    ),
    MetricSpec("assay_queue_depth", "gauge", "Jobs waiting in the queue (read at scrape time)."),
    MetricSpec(
        "assay_queue_oldest_age_seconds",
        "gauge",
        "Age of the oldest waiting job, 0 when the queue is empty (read at scrape time).",
    ),
    MetricSpec("assay_workers_busy", "gauge", "Workers running a job now (read at scrape time)."),
    MetricSpec("assay_workers", "gauge", "Workers in the pool."),
    MetricSpec(
        "assay_sandbox_acquire_seconds",
        "histogram",
        "Time a started job waited for the executor's resources (its memory budget) before "
        "its sandbox run began.",
        buckets=_START_BUCKETS,
    ),
    MetricSpec(
        "assay_job_duration_seconds",
        "histogram",
        "Wall time of a job attempt from start to verdict, by language and verdict.",
        ("language", "verdict"),
        _RUN_BUCKETS,
    ),
    MetricSpec(
        "assay_timeouts_total",
        "counter",
        "Job attempts ended by a time limit (CPU time, or the wall-clock backstop).",
        ("language",),
    ),
    MetricSpec(
        "assay_memory_kills_total",
        "counter",
        "Job attempts ended by the memory limit (killed by the cgroup).",
        ("language",),
    ),
    MetricSpec(
        "assay_security_events_total",
        "counter",
        "Contained misbehaviour the supervisor saw: 'seccomp_kill' (a run killed by SIGSYS, a "
        "forbidden system call ABI), 'output_flood' (output past its cap), "
        "'leftover_processes' (processes still alive when the program exited, killed at "
        "teardown).",
        ("kind",),
    ),
    MetricSpec(
        "assay_compile_cache_hits_total",
        "counter",
        "Builds answered by the on-disk compile cache (read at scrape time; repeats answered "
        "by the runner's in-memory cache in front of it are not counted).",
    ),
    MetricSpec(
        "assay_compile_cache_misses_total",
        "counter",
        "Builds the on-disk compile cache did not have, so they were compiled (read at scrape "
        "time).",
    ),
    MetricSpec(
        "assay_records_spooled",
        "gauge",
        "Execution records in the local spool, not yet uploaded to the object store "
        "(read at scrape time; 0 for local record directories).",
    ),
    MetricSpec(
        "assay_records_uploaded_total",
        "counter",
        "Execution records uploaded to the object store.",
    ),
    MetricSpec(
        "assay_records_upload_errors_total",
        "counter",
        "Failed uploads of spooled records (retried with back-off; nothing is dropped).",
    ),
    # Agent sessions (a SessionManager on the executor; read at scrape time unless a counter).
    MetricSpec("assay_sessions_open", "gauge", "Agent sessions open now (read at scrape time)."),
    MetricSpec(
        "assay_sessions_busy",
        "gauge",
        "Open sessions with a step or call in progress (running, or waiting for an executor slot).",
    ),
    MetricSpec(
        "assay_sessions_max",
        "gauge",
        "The cap on open sessions (ASSAY_SERVER_MAX_SESSIONS); creates beyond it get 429.",
    ),
    MetricSpec(
        "assay_sessions_memory_limit_bytes",
        "gauge",
        "Sum of the memory limits of the open sessions (what they may hold at most).",
    ),
    MetricSpec(
        "assay_sessions_oldest_age_seconds",
        "gauge",
        "Age of the oldest open session, 0 when none is open.",
    ),
    MetricSpec(
        "assay_sessions_past_ttl",
        "gauge",
        "Sessions whose sandbox is still alive over 2 s after it should have ended: open past "
        "their TTL or idle TTL (the reaper missed them), or ended but not yet torn down. "
        "Anything above 0 for minutes is a leak.",
    ),
    MetricSpec(
        "assay_sessions_ending",
        "gauge",
        "Sessions ended (closed, reaped, crashed) whose sandbox teardown has not finished.",
    ),
    MetricSpec("assay_sessions_created_total", "counter", "Sessions created (forks included)."),
    MetricSpec(
        "assay_sessions_rejected_total",
        "counter",
        "Session creates refused because the session cap or memory budget was full (429).",
    ),
    MetricSpec(
        "assay_sessions_ended_total",
        "counter",
        "Sessions ended, by reason: closed (by its owner), ttl, idle_ttl (reaped), cpu_limit, "
        "memory_limit, pids_limit (a step could not start: no process left to it), crashed "
        "(its sandbox died under it), node_lost (on a Ray cluster: the node holding it died).",
        ("reason",),
    ),
    MetricSpec(
        "assay_session_lifetime_seconds",
        "histogram",
        "Time from a session's creation to its end.",
        buckets=_LIFETIME_BUCKETS,
    ),
    MetricSpec(
        "assay_session_steps_total",
        "counter",
        "Shell steps (exec) answered in sessions (read at scrape time).",
    ),
    # Capacity per node: one series per node of the executor (the local executor is one node,
    # named by ASSAY_NODE_NAME or the host name); a cluster executor exports one per node.
    MetricSpec(
        "assay_node_up",
        "gauge",
        "1 while the node takes work, 0 when its agent is lost (cluster executor).",
        ("node",),
    ),
    MetricSpec("assay_node_slots", "gauge", "Sandbox slots (workers) the node offers.", ("node",)),
    MetricSpec("assay_node_slots_busy", "gauge", "Slots of the node running a job now.", ("node",)),
    MetricSpec(
        "assay_node_memory_budget_bytes",
        "gauge",
        "Memory the node's jobs may hold at once (the sum of their memory limits).",
        ("node",),
    ),
    MetricSpec(
        "assay_node_memory_reserved_bytes",
        "gauge",
        "Memory limits of the jobs running on the node now, counted against its budget.",
        ("node",),
    ),
    # The queue fleet (QueueExecutor and `assay worker`): the broker's streams by priority
    # class (read at scrape time), and each worker's own counts (its pod label tells them apart).
    MetricSpec(
        "assay_fleet_queue_depth",
        "gauge",
        "Jobs in the broker without a result yet (queued or running), by priority class.",
        ("priority",),
    ),
    MetricSpec(
        "assay_fleet_queue_lag",
        "gauge",
        "Jobs in the broker no worker has read yet, by priority class (what KEDA scales on).",
        ("priority",),
    ),
    MetricSpec(
        "assay_fleet_claims_total",
        "counter",
        "Jobs this worker claimed from a worker that died or stalled past the visibility timeout.",
    ),
    MetricSpec(
        "assay_fleet_jobs_total",
        "counter",
        "Jobs whose result this worker stored (its throughput: rate() of this).",
    ),
    MetricSpec(
        "assay_fleet_duplicate_results_total",
        "counter",
        "Results this worker computed for a job that already had one (dropped, never delivered).",
    ),
)
SPECS = {spec.name: spec for spec in METRICS}
