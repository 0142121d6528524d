"""Every tunable constant of Assay, in one place, each with the reason for its value."""

from __future__ import annotations

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
    "dataclasses",
)

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
#: tmpfs size a slot mounts between runs (resized to the run's ``disk_mb`` when it starts).
DEFAULT_DISK_MB = DISK_MB
