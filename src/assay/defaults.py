"""Every tunable constant of Assay, in one place, each with the reason for its value."""

from __future__ import annotations

import os
from pathlib import Path

#: Interpreter used *inside* the sandbox. Debian's python3 starts ~3x faster than a pyenv
#: build, and the fork server only needs the standard library.
PYTHON_INTERPRETER = "/usr/bin/python3"

#: CPU seconds a program may use (the verdict limit). Judges decide on CPU time, not wall
#: time, so a busy machine does not flip verdicts.
TIME_S = 2.0
#: Memory cap in MiB, swap included (cgroup).
MEMORY_MB = 512
#: Processes and threads together (cgroup pids controller); stops fork bombs.
PROCESSES = 64
#: Bytes of stdout, and separately of stderr, captured before the run is stopped as
#: ``output_limit``.
OUTPUT_BYTES = 16 * 1024 * 1024
#: Largest single file the program may write (RLIMIT_FSIZE).
FILE_BYTES = 64 * 1024 * 1024
#: Size of the one writable tmpfs (work dir, /tmp and /dev/shm share it).
DISK_MB = 128
#: Open files per process (RLIMIT_NOFILE).
OPEN_FILES = 256
#: Stack size cap in MiB; generous because recursive solutions are common in judged code.
STACK_MB = 256


def wall_for(time_s: float) -> float:
    """Wall-clock backstop for a CPU limit: 3x the CPU time plus one second.

    Only a program that sleeps or blocks hits it; a busy program hits the CPU limit first.
    """
    return 3.0 * time_s + 1.0


#: Limits for compiling (gcc needs far more memory and several processes).
COMPILE_TIME_S = 20.0
COMPILE_MEMORY_MB = 1024
COMPILE_PROCESSES = 32

#: Fixed environment inside every sandbox (principle 4: same input, same verdict).
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_ENV: dict[str, str] = {
    "PATH": SANDBOX_PATH,
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "",
    "TMPDIR": "/tmp",
    "TERM": "dumb",
}

#: The uid/gid programs run as (``nobody``).
SANDBOX_UID = 65534
SANDBOX_GID = 65534
#: Host user and group ids of sandbox slots when Assay runs as root: one per slot, from this
#: range (uid == gid), so per-user kernel quotas (inotify instances, pipe pages, pending
#: signals, fds in flight) belong to one run, not to every run at once. No host account may
#: use the range (checked at start); nothing on the host maps to it. Without root (a user
#: namespace maps a single id) every slot runs as SANDBOX_UID.
UID_BASE = 1_880_000_000
UID_COUNT = 4096

#: Directory inside the sandbox where the program's files live (its cwd).
WORK_DIR = "/work"

#: Host directories made visible read-only. Symlinks (merged /usr) are recreated as symlinks.
RO_BINDS: tuple[str, ...] = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
#: Host /etc entries a runtime needs; everything else of /etc stays invisible.
ETC_BINDS: tuple[str, ...] = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "mime.types",
    "java-17-openjdk",
    "ssl/openssl.cnf",
)

#: Standard-library modules imported once in the Python fork server, so runs that use them
#: start faster. Modules with per-process random state (``random``) are reseeded per run.
#: Each one also grows the image every run copies at fork and tears down at exit, so the
#: list holds what solutions commonly import: ``dataclasses`` (with ``inspect``, ``ast``
#: and ``dis``: ~1.1 MB, a seventh of the image) is left out.
PYTHON_PREIMPORT: tuple[str, ...] = (
    "collections",
    "itertools",
    "functools",
    "math",
    "re",
    "heapq",
    "bisect",
    "string",
    "typing",
    "json",
    "copy",
)

#: A run's cgroup serves a later run only if the run left at most this much charged to it
#: (dentries, page cache, the kernel's per-CPU pre-charge); cgroup v1 only.
CGROUP_REUSE_MAX_BYTES = 1 << 20

#: How often (at most) the supervisor samples a run's CPU time, in seconds. The actual
#: interval adapts to the remaining budget, so a run is stopped within this of its limit.
CPU_POLL_MAX_S = 0.05
#: How long a fork server may take to start before we declare the host broken.
ZYGOTE_START_TIMEOUT_S = 20.0
#: Attempts at getting a ready slot (a new fork server or slot each time) before a run is
#: reported as sandbox_error. A run that started is never silently re-run.
ZYGOTE_RESTARTS = 3
#: Runs served by one slot (a set of namespaces) before it is retired and replaced.
SLOT_MAX_RUNS = 1000
#: Idle armed slots a sandbox keeps per CPU (of each kind; at least 4), and on a host whose
#: RCU grace periods are normal rather than expedited (``/sys/kernel/rcu_normal`` = 1, as a
#: PREEMPT_RT kernel sets after boot): a slot's reset detaches four mounts and waits for a
#: grace period at each, ~38 us expedited but ~20 ms normal, so resets take ~75 ms there
#: and 4 per CPU served ~110 print(1) runs/s where 16 served 540-560, as many as the default
#: host (``benchmarks/host_factors.py --parts rcu``).
SLOTS_PER_CPU = 4
SLOTS_PER_CPU_SLOW_RCU = 16
#: tmpfs size a slot mounts between runs (resized to the run's ``disk_mb`` when it starts).
DEFAULT_DISK_MB = DISK_MB
#: Input files one run may be given. Real repositories have thousands to tens of thousands
#: of files (a SWE-bench workspace is staged whole for each verification); the bound sits
#: under what a run's tmpfs can hold (65,536 inodes, directories included) and the C
#: launcher's spec (65,536 entries), so a request over it is refused up front, naming it.
RUN_MAX_FILES = 50_000
#: Largest tmpfs of one verification run: the staged workspace plus the task's own disk
#: limit. A repository of hundreds of MiB fits; past this the verification is refused as a
#: sandbox_error naming this limit (tmpfs pages are memory of the host).
VERIFY_MAX_DISK_MB = 4096
#: How long a verification reads its report after the run's answer is back, until the
#: report's pipe reaches EOF: the gVisor tier relays the report through a host thread that
#: may still be writing it on a busy host. A report cut short there would read as a test
#: run that "ended early" (a failed verification) for an honest program.
VERIFY_REPORT_GRACE_S = 30.0
#: Largest workspace an agent task may carry (all its files together): real repositories
#: at their base commit run to hundreds of MiB.
TASK_MAX_WORKSPACE_BYTES = 1 << 30

# --- Rewards (assay.reward) -------------------------------------------------------------

#: CPU seconds per test below which run times are treated as equal by the efficiency
#: reward. A trivial program's CPU time is a few milliseconds of interpreter start-up,
#: scheduler ticks and cgroup accounting jitter, and varies by that much from run to run;
#: ranking programs on it would reward noise. Both the measured and the reference time are
#: floored (per test), so two equally trivial programs both score 1.0.
EFFICIENCY_CPU_FLOOR_S = 0.01
#: Peak memory below which the memory reward treats programs as equal. The interpreter
#: and page-cache pages touched by any run account for a few MiB that vary with allocator
#: and kernel behaviour, not with the program; both sides are floored to this.
MEMORY_FLOOR_BYTES = 8 * 1024 * 1024

#: Where the quality reward looks for ruff, in order. It must be under /usr: the sandbox
#: sees only the host's /usr (and /lib...) read-only, and ruff never runs on the host
#: (linting untrusted code is running a parser on hostile input). ``make install`` puts it
#: in /usr/local/bin with Debian's pip.
RUFF_PATHS: tuple[str, ...] = ("/usr/local/bin/ruff", "/usr/bin/ruff")
#: Rules the quality reward counts, passed explicitly with ``--isolated`` so the score does
#: not change with ruff's default rule set or any config file: ruff's defaults (E4, E7, E9,
#: F: real errors and unused names), whitespace (W) and likely bugs (B). Style-only rules
#: such as line length and import order are left out: they say little about code quality
#: and are trivially fixed by a formatter.
QUALITY_RUFF_SELECT = "E4,E7,E9,F,W,B"
#: Quality = 1 / (1 + findings per QUALITY_LINES_PER_UNIT non-blank lines): one finding in
#: ten lines halves the score; a clean program scores 1.0. Normalising by length keeps long
#: programs from being punished for being long.
QUALITY_LINES_PER_UNIT = 10
#: Limits for one ruff run (it lints one small file: tens of milliseconds, a few MiB).
QUALITY_TIME_S = 10.0
QUALITY_MEMORY_MB = 256
#: Environment of the ruff run: the sandbox's fixed env plus one rayon worker thread, so
#: ruff does not start a thread per host CPU and hit the sandbox's process limit.
QUALITY_ENV: dict[str, str] = {**SANDBOX_ENV, "RAYON_NUM_THREADS": "1"}

#: Executor: jobs that may wait in the queue before ``submit`` answers ``Overloaded`` (the
#: server's HTTP 429). Large enough for a GRPO step (8,000 programs) plus some headroom.
EXECUTOR_MAX_QUEUED = 50_000
#: Finished results kept for identical submissions (LRU).
EXECUTOR_CACHE_ENTRIES = 100_000
#: ... and at most this many bytes of them (outputs, files, messages); a result holding more
#: than ``EXECUTOR_CACHE_ENTRY_BYTES`` is not kept.
EXECUTOR_CACHE_BYTES = 64 << 20
EXECUTOR_CACHE_ENTRY_BYTES = 1 << 20
#: Built artefacts kept in memory by a Runner (in front of the on-disk compile cache); a
#: larger artefact is read from disk on each use.
RUNNER_ARTIFACT_BYTES = 64 << 20
RUNNER_ARTIFACT_ENTRY_BYTES = 8 << 20
#: Extra attempts after a ``sandbox_error`` (our fault); never for the program's failures.
EXECUTOR_RETRIES = 2
#: A submission is spread over idle slots only if it is expected to take at least this long;
#: below it, loading the program again in each slot costs more than it saves.
EXECUTOR_SPLIT_MIN_S = 0.2
#: Share of the machine's memory the executor lets running jobs' memory limits add up to.
EXECUTOR_MEMORY_SHARE = 0.75
#: Session steps running at once per executor slot (their own budget: a step holds no batch
#: worker). A waiting step (``sleep``, polling a server) costs only its place here; a
#: computing one weighs on the CPU as one run does, so one per slot bounds what all steps
#: together can take from batch work to what the same number of batch runs would.
STEP_SLOTS_PER_SLOT = 1
#: An agent session's CPU weight in percent of a judged run's (``RunRequest.cpu_weight``):
#: where a session's processes (a fork bomb, a build) and judged runs want the same core,
#: the runs get 4/5 of it; a session alone on the machine still gets all of it.
SESSION_CPU_WEIGHT = 25

#: Sessions one caller may have starting (created or forked) at once: a sandbox start costs
#: a fraction of a core, and a flood of creates and forks from one caller took CPU from
#: another's batch. The service's requests beyond it wait their turn on the event loop;
#: a ``SessionManager`` used directly refuses them (``TooManySessions``, retry later).
SESSION_STARTS_PER_CALLER = 2
#: ... and what the service lets one caller (tenant) start at once: its further creates and
#: forks wait (never refused). A start is ~13 ms of CPU, nearly all of it on the trusted
#: side or in the slot's own processes, outside the session's CPU weight (measured: a
#: create+close, 2.3 ms in the service and 10.8 ms in sandbox processes). With two at once a
#: tenant flooding creates and forks held most of a core of a 2-core host, and another
#: tenant's batch took 1.86-1.94x its time alone; with one, 1.30-1.32x
#: (``benchmarks/tenants_load.py --runs 96``). One tenant's 64 creates then take ~0.7 s.
SERVER_SESSION_STARTS_PER_CALLER = 1
#: Largest /work + /tmp a session may ask for over HTTP (a tmpfs: its pages are charged to
#: the session's memory limit as they are written, so this bounds a promise, not RAM).
SESSION_MAX_DISK_MB = 4096
#: Largest total CPU of a session (the sandbox's bound of a run's CPU limit).
SESSION_MAX_CPU_S = 3600.0
#: A session's lifetime and idle lifetime when not given (``Session``, the HTTP create, the
#: remote client): one place, so the three cannot drift apart.
SESSION_TTL_S = 3600.0
SESSION_IDLE_TTL_S = 600.0
#: Open sessions a service holds at most (``ASSAY_SERVER_MAX_SESSIONS``); 429 beyond.
SERVER_MAX_SESSIONS = 256
#: Share of the memory available to the service (``MemAvailable`` at start, or its cgroup's
#: limit if lower) that open sessions' memory limits may add up to by default: a session's
#: limit is a promise of memory, and 256 sessions x 512 MiB were accepted on a 24 GiB host.
#: The rest is left to batch jobs and the service itself.
SESSION_MEMORY_SHARE = 0.5

#: Largest download out of a session (a file, or the files of a tar), refused beyond it
#: (HTTP 413 naming the path and this cap). The bytes stream through in chunks whatever the
#: size; the cap bounds how long one download may keep a session and a connection busy and
#: matches the largest session disk a request may ask for (``SESSION_MAX_DISK_MB``).
SESSION_DOWNLOAD_MAX_BYTES = 4 << 30
#: Bytes a second all session downloads of the service together may go at: each byte is
#: copied by the agent, the pipe, the service's one interpreter and the socket, and without
#: a bound one tenant's download loop took CPU from another's batch (2.7x its time alone
#: on 2 cores). At this pace the largest download takes about a minute.
SESSION_DOWNLOAD_BYTES_PER_S = 64 << 20
#: Bytes read from a download's pipe at a time: what the service holds per download.
SESSION_DOWNLOAD_CHUNK_BYTES = 1 << 20
#: A download must be read to its end within this (a client reading 4 GiB at ~7 MB/s); a
#: slower reader is cut off, which ends the agent's copy, not the session.
SESSION_DOWNLOAD_TIMEOUT_S = 600.0
#: Threads of the service that run session calls (steps, files, creates, downloads), apart
#: from the event loop's default pool that batch submissions wait on: one per open session
#: at the default session cap, so a call of one session never waits for another's.
SERVER_SESSION_THREADS = 256
#: Session calls of one caller (tenant) running on that pool at once; its others wait on
#: the event loop: a quarter of the pool, so one caller's requests leave three quarters to
#: the others.
SERVER_SESSION_CALLS_PER_CALLER = 64
#: A request's line and headers must arrive within this of its first byte (or of its
#: connection): a client that trickles them (slowloris) is disconnected instead of holding a
#: connection, and its descriptor, for ever. Generous for any real client on any network.
SERVER_HEAD_TIMEOUT_S = 10.0
#: Bytes a request may send before its headers end (431 and disconnect beyond): headers are
#: a few KiB; one read of the socket may also carry up to 256 KiB of the body.
SERVER_HEAD_MAX_BYTES = 1 << 20
#: A request's body must arrive within this of its headers (32 MiB, the body cap, at
#: about 0.3 MB/s).
SERVER_BODY_TIMEOUT_S = 120.0

#: Queue fleet (``QueueExecutor`` and ``assay worker``). Jobs (queued or running) the broker
#: may hold before ``submit`` waits, then answers ``Overloaded``: a few GRPO steps' worth, so
#: a trainer far ahead of its workers is told instead of filling the broker's memory.
QUEUE_MAX_DEPTH = 50_000
#: How long ``submit`` waits for room below ``QUEUE_MAX_DEPTH`` before raising ``Overloaded``.
QUEUE_BLOCK_S = 30.0
#: A job pending on a worker that has not touched it for this long is claimed by another:
#: the time to notice a dead worker. Live workers touch their jobs every third of it, so a
#: long job is never taken from a worker that is still running it.
QUEUE_VISIBILITY_S = 30.0
#: Attempts of a job under which its worker died (claimed again each time) before the job
#: is answered ``sandbox_error`` instead of taking down worker after worker.
QUEUE_MAX_ATTEMPTS = 3
#: Jobs a worker reads beyond its slots, so a slot that frees finds its next job local.
QUEUE_PREFETCH = 4
#: Batches, their results and attempt counts stay in the broker this long after their last
#: change: long enough for a trainer that restarts to collect what it submitted.
QUEUE_RESULT_TTL_S = 24 * 3600
#: How long a worker or collector blocks on the broker per call (bounds how late a stop or a
#: new batch is noticed).
QUEUE_POLL_S = 0.5


def state_dir() -> Path:
    """Where Assay keeps state across restarts (runtime estimates): ``$ASSAY_STATE_DIR`` or
    ``~/.local/state/assay``."""
    env = os.environ.get("ASSAY_STATE_DIR")
    return Path(env) if env else Path.home() / ".local" / "state" / "assay"


#: What one imported image may expand to (its layers' files added up, every layer counted:
#: a file a later layer replaces still cost its write) and how many entries its layers may
#: hold. An archive is untrusted and compresses without bound (a gzip of zeros shrinks
#: ~1000x), so without a cap a small upload fills the store's disk. 32 GiB is above the
#: largest task images in use (CUDA toolchains, ~20 GiB); ``assay image import --max-bytes``
#: or ``import_image(max_bytes=)`` raises it for one import.
IMAGE_MAX_BYTES = 32 << 30
IMAGE_MAX_ENTRIES = 2_000_000


#: Compiled artefacts kept on disk (LRU beyond this); RL batches repeat programs often.
COMPILE_CACHE_BYTES = 2 << 30


def compile_cache_dir() -> Path:
    """``$ASSAY_CACHE_DIR`` or ``~/.cache/assay/compile``."""
    env = os.environ.get("ASSAY_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "assay" / "compile"


#: Default wall-clock timeout of one session step (``exec``, ``run_cell``) and of the
#: adapters' steps, in seconds: long enough for a test run or a build step of a small
#: repository, short enough that a hung command (a server in the foreground, ``read``
#: from the terminal) costs an agent's episode half a minute, not its whole TTL. A step is
#: stopped within about 0.1 s of its timeout (the agent polls the step's pipes and exit).
SESSION_STEP_TIMEOUT_S = 30.0
#: How often a session's agent checks that the session is below its process limit (what
#: finished steps left running, a fork bomb's processes, is killed, newest first, when it
#: is not): often enough that a bomb left by a step is gone within a fraction of a second,
#: rarely enough that an idle session's check (one /proc listing) costs nothing measurable.
SESSION_PIDS_POLL_S = 0.25


# -- task image pools ----------------------------------------------------------------------------
#: Image pools kept warm at once (each a fork server and its idle slots), and the idle
#: armed slots per kind in one image's pool (the host pool keeps more).
IMAGE_POOLS_WARM = 4
IMAGE_POOL_SIZE = 4

# -- the gVisor tier -------------------------------------------------------------------------------
#: Runs one gVisor container serves before it is replaced (a fresh Sentry bounds what one
#: run's leftovers in its kernel state can do to the next).
GVISOR_RUNS_PER_CONTAINER = 64
#: Seconds a container may take to start and report ready (runsc's own start is ~0.3 s;
#: a loaded host has taken ten times that).
GVISOR_START_TIMEOUT_S = 30.0
#: Seconds past a run's wall limit before the host gives up on the container's answer.
GVISOR_ANSWER_GRACE_S = 5.0
#: Host threads and stub processes of one gVisor sandbox (the program's own processes are
#: capped inside by RLIMIT_NPROC).
GVISOR_HOST_PIDS = 4096
#: Growth of a container's host memory (over its fresh state) after which it is replaced.
GVISOR_RETIRE_GROWTH_BYTES = 64 << 20

# -- the Ray executor ----------------------------------------------------------------------------
#: How often the driver looks for nodes that joined or left, in seconds.
RAY_MEMBERSHIP_S = 1.0
#: Memory a sandbox slot is given when a node is sized by its memory (MiB).
RAY_SLOT_MEMORY_MB = 1024

# -- session calls ---------------------------------------------------------------------------------
#: How long a new session's agent may take to say it is ready; how long past a step's own
#: timeout it may take to answer before the session is taken for dead (it kills the step at
#: its timeout, then reports); the timeout of calls that are not steps (files, tar).
SESSION_START_TIMEOUT_S = 20.0
SESSION_REPLY_GRACE_S = 10.0
SESSION_CALL_TIMEOUT_S = 60.0
