"""Verification time on a real repository of 2,000+ files (issue 27), against the same
repository without its generated modules (~20 files) in the same run.

The repository is the test suite's ``big`` layout (``tests/sessions/realrepos.py``):
``sortedcontainers`` under ``src/`` with its tests and ``--extra`` generated modules,
converted from its SWE-bench row. Printed, each against the small repository:

- ``convert_s``: ``from_row`` (git archive of the base commit, both patches applied);
- ``create_s``: ``Session.for_task`` (the workspace as a git repository, made once per task
  on the host, then unpacked in the session);
- ``first_verify_s``: the first ``verify()`` (the baseline run on the task's own workspace,
  then the verification run);
- ``verify_p50_s``: later ``verify()`` calls (the baseline is cached on the task);
- what one later verification is made of: ``download_s`` (the workspace's tar out of the
  session), ``parse_s`` (tar to files), ``prepare_s`` (protected paths reset, hidden tests
  in), ``run_s`` (the sandbox run: staging the files, pytest, the tests).

Usage: ``.venv/bin/python benchmarks/verify_real_repo.py [--extra 2000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from assay import Runner
from assay.sessions import Session, _verify_run
from assay.sessions.verify import verifier_of
from assay.tasks.swebench import from_row
from assay.tasks.types import task_limits, tree_from_tar

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "realrepos", _HERE.parent / "tests" / "sessions" / "realrepos.py"
)
assert _spec is not None and _spec.loader is not None
realrepos = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(realrepos)


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def measure(runner: Runner, mirrors: Path, extra: int, repeat: int) -> dict[str, float]:
    built = realrepos.build(mirrors, "big" if extra else "src", extra_files=extra)
    limits = task_limits(time_s=60, memory_mb=1024)
    task, convert_s = _timed(lambda: from_row(realrepos.row_of(built), mirrors, limits))
    session, create_s = _timed(lambda: Session.for_task(runner, task))
    with session:
        session.exec("cat > /tmp/fix.patch && git apply /tmp/fix.patch", stdin=built["patch"])
        first, first_s = _timed(session.verify)
        assert first.verdict == "accepted", first.reason
        later = [_timed(session.verify)[1] for _ in range(repeat)]
        parts: dict[str, list[float]] = {k: [] for k in ("download", "parse", "prepare", "run")}
        verifier = verifier_of(session)
        for _ in range(repeat):
            tar, t1 = _timed(session.download_tar, exclude=(".git",))
            (files, links), t2 = _timed(tree_from_tar, tar, "workspace")
            (work, _edits), t3 = _timed(_verify_run.prepare, task, files, links)
            run, t4 = _timed(_verify_run.run_tests, runner.execute, task, work, links)
            assert run.complete, run.tail()
            for key, value in zip(parts, (t1, t2, t3, t4), strict=True):
                parts[key].append(value)
        assert verifier.task is task
    return {
        "files": len(task.files),
        "convert_s": convert_s,
        "create_s": create_s,
        "first_verify_s": first_s,
        "verify_p50_s": statistics.median(later),
        **{f"{k}_s": statistics.median(v) for k, v in parts.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extra", type=int, default=2000, help="generated modules added")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with Runner() as runner, tempfile.TemporaryDirectory() as tmp:
        small = measure(runner, Path(tmp) / "small", 0, args.repeat)
        big = measure(runner, Path(tmp) / "big", args.extra, args.repeat)
    print(f"{'':16}{'big':>10}{'small':>10}{'ratio':>8}")
    for key in big:
        ratio = big[key] / small[key] if small[key] else float("nan")
        print(f"{key:16}{big[key]:10.3f}{small[key]:10.3f}{ratio:8.1f}")
    print(json.dumps({"big": big, "small": small}))


if __name__ == "__main__":
    main()
