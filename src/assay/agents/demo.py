"""``assay agent demo``: the scripted agents on a few CodeT repair tasks, step by step."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..runner import Runner
from ..sessions import Session, SessionLimits
from ..tasks import AgentTask
from ..tasks.codet import from_samples
from .scripted import AGENTS

#: HumanEval tasks whose first failing CodeGen samples make short, readable episodes.
DEMO_TASKS = ("HumanEval/0", "HumanEval/13", "HumanEval/23", "HumanEval/28")


def demo_tasks(corpora: Path, runner: Runner, count: int = 4) -> list[AgentTask]:
    samples = corpora / "codet" / "humaneval-codegen16b-100-samples.jsonl"
    dataset = corpora / "humaneval" / "HumanEval.jsonl.gz"
    found = from_samples(samples, dataset, runner, tasks=set(DEMO_TASKS[:count]))
    return list(found)


def _fmt(value: float | None) -> str:
    return "None" if value is None else f"{value:+.3f}"


def run_agent_demo(runner: Runner, console: Console, corpora: Path, gated: bool = False) -> int:
    """Run every scripted agent on a repair task each; returns the number of surprises (an
    agent whose rewards are not what its script should earn)."""
    samples = corpora / "codet" / "humaneval-codegen16b-100-samples.jsonl"
    if not samples.exists():
        console.print(f"[yellow]CodeT samples not found at {samples}; skipping the agent demo.[/]")
        return 0
    tasks = demo_tasks(corpora, runner)
    surprises = 0
    limits = SessionLimits(cpu_s=120, memory_mb=256, processes=32, disk_mb=64)
    for (name, agent), task in zip(AGENTS.items(), tasks, strict=False):
        table = Table(title=f"agent [bold]{name}[/] on {task.task_id}", title_justify="left")
        for col in ("step", "action", "saw", "passed", "new +/-", "protected edits", "step reward"):
            table.add_column(col)
        with Session.for_task(runner, task, gated=gated, limits=limits) as s:
            for i, step in enumerate(agent(s, task), 1):
                v = step.verify
                seen = " ".join(step.observation.split())[:40]
                if v is None:
                    table.add_row(str(i), step.action, seen, "", "", "", "")
                    continue
                table.add_row(
                    str(i),
                    step.action,
                    seen,
                    f"{v.passed}/{v.total}",
                    f"+{len(v.newly_passing)} -{len(v.newly_failing)}",
                    ", ".join(v.protected_edits) or "-",
                    _fmt(v.step_reward),
                )
            episode = s.episode_rewards()
        console.print(table)
        console.print(
            f"  final reward {_fmt(episode.final_reward)} ({episode.verdict}); step rewards "
            f"{[_fmt(r) for r in episode.step_rewards]}" + (" (gated)" if gated else "")
        )
        surprises += not _as_expected(name, episode.raw_step_rewards, episode.final_reward)
    console.print(f"{len(tasks)} episodes; {surprises} unexpected.")
    return surprises


def _as_expected(name: str, steps: list[float | None], final: float | None) -> bool:
    if any(r is None for r in steps) or final is None:
        return False
    if name == "fixer":
        return final == 1.0 and (steps[-1] or 0) > 0
    if name == "tamperer":
        return (steps[-1] or 0) < 0 and final < 1.0
    if name == "looper":
        return True  # stopped, and the session answered the next step (shown)
    return (steps[-1] or 0) < 0  # breaker
