"""``make demo``: sample programs, from well-behaved to hostile, and what the sandbox made of them."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich import box
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .runner import Runner
from .types import Limits


@dataclass(frozen=True)
class Sample:
    name: str
    language: str
    code: str
    expect: str
    stdin: str = ""
    limits: Limits = field(
        default_factory=lambda: Limits(time_s=1.0, memory_mb=128, output_bytes=1 << 20)
    )


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "sum of two numbers",
        "python",
        "a, b = map(int, input().split())\nprint(a + b)",
        "ok",
        "2 40\n",
    ),
    Sample("uncaught exception", "python", "print(1 / 0)", "runtime_error"),
    Sample(
        "C: sum of two numbers",
        "c",
        '#include <stdio.h>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);return 0;}',
        "ok",
        "20 22\n",
    ),
    Sample("C++: compile error", "cpp", "int main() { return undefined_name; }", "compile_error"),
    Sample("infinite loop", "python", "while True:\n    pass", "time_limit"),
    Sample("sleep forever", "python", "import time\ntime.sleep(10**6)", "time_limit"),
    Sample(
        "memory bomb",
        "python",
        "x = []\nwhile True:\n    x.append(bytearray(1 << 20))",
        "memory_limit",
    ),
    Sample(
        "fork bomb",
        "python",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "time_limit",
    ),
    Sample(
        "output flood",
        "python",
        "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
        "output_limit",
    ),
    Sample(
        "network egress",
        "python",
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=1)\n    print('CONNECTED')\n"
        "except OSError as e:\n    print('blocked:', e.strerror)",
        "ok",
    ),
    Sample(
        "read host secrets",
        "python",
        "import os\nfor p in ('/etc/shadow', '/root', '/home', '/proc/1/environ'):\n"
        "    try:\n        print(p, 'LEAKED', os.listdir(p) if os.path.isdir(p) else open(p).read()[:20])\n"
        "    except OSError as e:\n        print(p, 'blocked:', e.strerror)",
        "ok",
    ),
    Sample(
        "escape attempts",
        "python",
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('unshare', libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))\n"
        "print('ptrace', libc.ptrace(16, 1, 0, 0), os.strerror(ctypes.get_errno()))\n"
        "print('uid', os.getuid())",
        "ok",
    ),
)


def run_demo(runner: Runner, console: Console) -> int:
    """Run every sample; returns how many ended with an unexpected status."""
    # Fits 80 columns without cutting a word: the expected status shows only when the
    # program did something else, and the output column folds.
    table = Table(title="Assay sandbox demo", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("program", min_width=13)
    table.add_column("lang", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for col in ("cpu s", "wall s", "MiB"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("output (first line)", overflow="fold", min_width=10)
    surprises = 0
    start = time.monotonic()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("running samples", total=len(SAMPLES))
        for sample in SAMPLES:
            result = runner.run(sample.code, sample.language, sample.stdin, sample.limits)
            ok = result.status == sample.expect
            surprises += not ok
            first = result.stdout.decode(errors="replace").strip().splitlines()
            line = first[0][:60] if first else ""
            if len(first) > 1:
                line += f" (+{len(first) - 1} lines)"
            status = (
                f"[green]{result.status}[/]"
                if ok
                else f"[red]{result.status}[/] (expected {sample.expect})"
            )
            table.add_row(
                sample.name,
                sample.language,
                status,
                f"{result.cpu_s:.3f}",
                f"{result.wall_s:.3f}",
                f"{result.peak_memory_bytes / 2**20:.1f}",
                line,
            )
            progress.advance(task)
    console.print(table)
    console.print(
        f"{len(SAMPLES)} programs in {time.monotonic() - start:.1f} s; {surprises} unexpected."
    )
    return surprises


#: The shared corpora sit beside the repository (``../shared/corpora``); ASSAY_CORPORA overrides.
CORPORA = Path(
    os.environ.get(
        "ASSAY_CORPORA", Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
    )
)
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"
HUMANEVAL_SAMPLES = Path(__file__).with_name("demo_data") / "humaneval_samples.jsonl"


def run_eval_demo(runner: Runner, console: Console, dataset: Path = HUMANEVAL) -> int:
    """Judge the bundled HumanEval samples (correct, wrong, hostile, reward hacking)."""
    from .evaluate import evaluate, summarize

    if not dataset.exists():
        console.print(f"[yellow]HumanEval not found at {dataset}; skipping the judging demo.[/]")
        return 0
    lines = HUMANEVAL_SAMPLES.read_text().splitlines()
    labels = [json.loads(line)["label"] for line in lines]
    from ._progress import judging_progress

    with (
        tempfile.TemporaryDirectory() as tmp,
        judging_progress(console, "judging HumanEval samples") as (on_start, on_row),
    ):
        rows = evaluate(
            dataset,
            "humaneval",
            HUMANEVAL_SAMPLES,
            Path(tmp) / "results.jsonl",
            runner=runner,
            on_start=on_start,
            on_result=on_row,
        )
    by_key = {(r["task_id"], r["sample_index"]): r for r in rows}
    table = Table(title="Assay judging demo: HumanEval samples", box=box.SIMPLE_HEAD)
    for col in ("task", "sample", "verdict", "reward", "reason"):
        table.add_column(col, overflow="fold", no_wrap=col in ("task", "verdict", "reward"))
    counts: dict[str, int] = {}
    for line, label in zip(lines, labels, strict=True):
        task = json.loads(line)["task_id"]
        index = counts.get(task, 0)
        counts[task] = index + 1
        r = by_key[(task, index)]
        colour = "green" if r["verdict"] == "accepted" else "yellow"
        table.add_row(
            task, label, f"[{colour}]{r['verdict']}[/]", str(r["reward"]), r["reason"][:70]
        )
    console.print(table)
    summary = summarize(rows)
    console.print(
        f"accepted {summary['accepted']}/{summary['samples']}; pass@1 {summary.get('pass@1', 0):.3f}"
    )
    hacked = sum(
        1
        for r, label in zip(rows, labels, strict=False)
        if label.startswith("hack") and r["verdict"] == "accepted"
    )
    return hacked
