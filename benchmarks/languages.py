"""Per language: compile time (cold, and cached on disk) and per-run overhead of the sandbox
against a bare run of the same artefact, in one run. Ends with one JSON line
``{language: {compile_cold_s, compile_cached_s, run_overhead_ms}}``.

    .venv/bin/python benchmarks/languages.py [--runs 30] [--languages cpp,java,...]

A language whose toolchain is missing is skipped (and named). The bare run executes the
artefact the sandbox built, with the same argv and environment, from a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from assay import Runner, defaults, languages
from assay.languages.cache import CompileCache
from assay.sandbox import RunRequest

HELLO = {
    "python": 'print("hello")\n',
    "c": '#include <stdio.h>\nint main(void){puts("hello");return 0;}\n',
    "cpp": '#include <iostream>\nint main(){std::cout<<"hello"<<std::endl;}\n',
    "java": 'public class Main { public static void main(String[] a) { System.out.println("hello"); } }\n',
    "javascript": 'console.log("hello");\n',
    "typescript": 'const greeting: string = "hello";\nconsole.log(greeting);\n',
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n',
    "rust": 'fn main() { println!("hello"); }\n',
    "bash": "echo hello\n",
}


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def bare_run(req: RunRequest, runs: int) -> list[float]:
    """Run the request's program without a sandbox: files in a temp dir, same argv and env."""
    with tempfile.TemporaryDirectory() as tmp:
        for path, data, mode in req.files:
            target = Path(tmp) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            os.chmod(target, mode)
        argv = [a.replace(defaults.WORK_DIR, tmp) for a in req.argv]
        if req.mode == "python":
            argv = [defaults.PYTHON_INTERPRETER, *argv]
        env = {**defaults.SANDBOX_ENV, "HOME": tmp, "TMPDIR": tmp}
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            out = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, check=False)
            times.append(time.perf_counter() - t0)
            if out.stdout.strip() != b"hello":
                raise SystemExit(
                    f"bare run failed: {argv} {out.stdout[:200]!r} {out.stderr[:300]!r}"
                )
    return times


def measure(language: str, runs: int) -> dict[str, float]:
    source = HELLO[language]
    with (
        tempfile.TemporaryDirectory() as cache_dir,
        Runner(compile_cache=CompileCache(cache_dir)) as runner,
    ):
        runner.sandbox.warm_up(1)
        t0 = time.perf_counter()
        req = runner.request(source, language)
        cold = time.perf_counter() - t0
        if not isinstance(req, RunRequest):
            raise SystemExit(f"{language}: build failed: {req.stderr[-500:]!r}")
        runner._cache.clear()  # the next build must come from the on-disk cache
        t0 = time.perf_counter()
        runner.request(source, language)
        cached = time.perf_counter() - t0
        sandboxed = []
        for _ in range(runs):
            t0 = time.perf_counter()
            result = runner.sandbox.execute(req)
            sandboxed.append(time.perf_counter() - t0)
            if result.stdout.strip() != b"hello":
                raise SystemExit(f"{language}: sandboxed run failed: {result}")
        bare = bare_run(req, runs)
    overhead_ms = (p50(sandboxed) - p50(bare)) * 1000
    print(
        f"{language:11s} compile cold {cold:7.3f} s  cached {cached * 1000:7.2f} ms  "
        f"run p50 sandboxed {p50(sandboxed) * 1000:7.2f} ms  bare {p50(bare) * 1000:7.2f} ms  "
        f"overhead {overhead_ms:6.2f} ms",
        flush=True,
    )
    return {
        "compile_cold_s": round(cold, 4),
        "compile_cached_s": round(cached, 5),
        "run_overhead_ms": round(overhead_ms, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=30, help="runs per language and side")
    ap.add_argument("--languages", default=",".join(HELLO), help="comma-separated")
    args = ap.parse_args()
    out: dict[str, dict[str, float]] = {}
    for language in args.languages.split(","):
        if language not in languages.names():
            print(f"{language:11s} skipped: not registered in this build")
            continue
        toolchain = languages.get(language).toolchain()
        if "missing" in toolchain:
            print(f"{language:11s} skipped: toolchain missing ({toolchain})")
            continue
        out[language] = measure(language, args.runs)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
