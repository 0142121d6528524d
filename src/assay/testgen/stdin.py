"""Test generation for stdin/stdout problems (Kattis packages and the like).

1. Inputs: the problem's own inputs, and mutations of their tokens (numbers changed by one,
   doubled, halved, negated, zeroed; words edited; lines repeated, dropped or swapped),
   grown EvalPlus-style from the inputs kept so far.
2. Validity: a mutated input is kept only where the problem's *input validator* accepts it
   (run in the sandbox with the input on stdin; Kattis convention: exit code 42 accepts).
   Without a validator nothing is mutated: only a validator knows the input format's rules.
3. Oracle: the reference runs on every input in the sandbox, twice (the second time, for
   Python, in a fresh interpreter with another hash seed); an input whose output differs
   is flaky, one it fails on (error, time, memory) or is slow on is dropped with the reason.
4. Adequacy (Python references): AST mutants of the reference run on the inputs until one
   tells them apart; the suite keeps every such input, then inputs with new outputs.
   The time limit per test is the reference's slowest CPU time with a margin.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..judge import Problem, TestCase
from ..runner import Runner
from ..sandbox import RunRequest
from ..types import ExecResult, Limits
from .mutants import mutants
from .report import gate
from .strategies import INT_CAP, seed_for

#: Exit codes of an input validator that accept the input (Kattis: 42 accept, 43 reject).
ACCEPT = (42,)
_NUMBER = re.compile(r"-?\d+(\.\d+)?\Z")
_OTHER_HASH_SEED = "12345"


@dataclass(frozen=True, slots=True)
class StdinTask:
    task_id: str
    reference: str
    #: The problem's own inputs (stdin texts): the seeds of mutation, and tests themselves.
    inputs: tuple[str, ...]
    #: Source of the input validator ("" = none: then nothing is mutated).
    validator: str = ""
    language: str = "python"
    validator_language: str = "python"
    compare: str = "tokens"
    compare_options: dict[str, Any] = field(default_factory=dict)
    checker: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StdinOptions:
    seed: int = 0
    mutations: int = 60
    max_tests: int = 30
    max_mutants: int = 20
    #: Inputs on which the reference needs more CPU seconds than this are dropped ("slow").
    slow_s: float = 1.0
    min_mutation_score: float = 0.0
    run_limits: Limits = field(default_factory=lambda: Limits(time_s=10.0, memory_mb=1024))


def _number(token: str, rng: random.Random, cap: int) -> str:
    if "." in token:
        v = float(token)
        decimals = len(token.split(".")[1])
        new = rng.choice([v + 1, v - 1, -v, v * 2, v / 2, 0.0])
        return f"{new:.{decimals}f}"
    n = int(token)
    choices = [n + 1, n - 1, -n, n * 2, n // 2, 0, 1, rng.randint(0, 100), cap]
    return str(max(-cap, min(cap, rng.choice(choices))))


def _word(token: str, rng: random.Random, alphabet: str) -> str:
    i = rng.randrange(len(token))
    return rng.choice(
        [
            token[:i] + token[i + 1 :],
            token[:i] + rng.choice(alphabet) + token[i:],
            token[:i] + rng.choice(alphabet) + token[i + 1 :],
            token.swapcase(),
            token[::-1],
        ]
    )


def mutate_tokens(text: str, rng: random.Random, cap: int = INT_CAP) -> str:
    """One token-level mutation of a stdin text; whitespace and line structure are kept
    except by the line operations (repeat, drop, swap a line)."""
    lines = text.split("\n")
    spots = [(i, j) for i, line in enumerate(lines) for j, tok in enumerate(line.split(" ")) if tok]
    alphabet = "".join(sorted({c for c in text if not c.isspace()})) or "a"
    op = rng.choice(["token"] * 6 + ["repeat", "drop", "swap"])
    body = [i for i, line in enumerate(lines) if line.strip()]
    if op == "token" and spots:
        i, j = rng.choice(spots)
        toks = lines[i].split(" ")
        tok = toks[j]
        toks[j] = _number(tok, rng, cap) if _NUMBER.match(tok) else _word(tok, rng, alphabet)
        lines[i] = " ".join(toks)
    elif op == "repeat" and body:
        i = rng.choice(body)
        lines.insert(i, lines[i])
    elif op == "drop" and len(body) > 1:
        del lines[rng.choice(body)]
    elif op == "swap" and len(body) > 1:
        a, b = rng.sample(body, 2)
        lines[a], lines[b] = lines[b], lines[a]
    return "\n".join(lines)


def mutations(seeds: list[str], rng: random.Random, count: int) -> list[str]:
    """``count`` mutations grown from ``seeds`` (seven times in ten from a seed itself),
    with ints capped at the largest of :data:`INT_CAP` and the seeds' own ints."""
    if not seeds:
        return []
    written = [int(t) for s in seeds for t in s.split() if re.fullmatch(r"-?\d+", t)]
    cap = max([INT_CAP, *(abs(n) for n in written)])
    corpus = list(seeds)
    out = []
    for _ in range(count):
        base = rng.choice(seeds if rng.random() < 0.7 else corpus)
        new = mutate_tokens(base, rng, cap)
        corpus.append(new)
        out.append(new)
    return out


def _run(
    runner: Runner, code: str, language: str, stdin: str, limits: Limits, fresh: bool = False
) -> ExecResult:
    req = runner.request(code, language, stdin, limits)
    if isinstance(req, ExecResult):
        return req
    if fresh and req.mode == "python":  # a new interpreter, so the hash seed really differs
        env = {**req.env, "PYTHONHASHSEED": _OTHER_HASH_SEED}
        req = RunRequest("exec", [runner.python, *req.argv], req.files, req.stdin, limits, env=env)
    return runner.execute(req)


def _why(result: ExecResult) -> str:
    if result.status == "ok" and result.exit_code not in (0, None):
        return "error"
    return {"time_limit": "timeout", "memory_limit": "memory", "ok": "ok"}.get(
        result.status, "error"
    )


def generate_stdin(runner: Runner, task: StdinTask, options: StdinOptions | None = None) -> Problem:
    """The task's generated stdio suite as a :class:`Problem`; ``metadata["quality"]`` is
    its quality report."""
    options = options or StdinOptions()
    if not task.inputs:
        raise ValidationError("inputs", f"{task.task_id}: no inputs to start from")
    dropped: Counter[str] = Counter()
    examples_of: dict[str, str] = {}
    limits = options.run_limits

    def drop(reason: str, message: str) -> None:
        dropped[reason] += 1
        examples_of.setdefault(reason, message[:200])

    pool: list[str] = list(dict.fromkeys(task.inputs))
    kinds = ["given"] * len(pool)
    if task.validator:
        rng = random.Random(seed_for(options.seed, task.task_id, "stdin"))
        seen = set(pool)
        for text in mutations(pool, rng, options.mutations):
            if text in seen:
                continue
            seen.add(text)
            verdict = _run(runner, task.validator, task.validator_language, text, limits)
            # A non-zero exit is a runtime_error to the sandbox; the code is what counts.
            if verdict.status in ("ok", "runtime_error") and verdict.exit_code in ACCEPT:
                pool.append(text)
                kinds.append("mutation")
            else:
                drop("invalid", f"the input validator said {verdict.status}/{verdict.exit_code}")
    outputs: list[tuple[str, bytes, float]] = []  # (input, output, cpu)
    for text in pool:
        first = _run(runner, task.reference, task.language, text, limits)
        if _why(first) != "ok":
            drop(_why(first), first.stderr.decode(errors="replace")[-200:] or first.status)
            continue
        again = _run(runner, task.reference, task.language, text, limits, fresh=True)
        if _why(again) != "ok" or again.stdout != first.stdout:
            drop("flaky", "the second run's output differs")
            continue
        if max(first.cpu_s, again.cpu_s) > options.slow_s:
            drop("slow", f"the reference took {first.cpu_s:.3f} s of CPU")
            continue
        outputs.append((text, first.stdout, max(first.cpu_s, again.cpu_s)))
    if not outputs:
        raise ValidationError(
            "reference", f"{task.task_id}: no input has a usable answer ({dict(dropped)})"
        )
    chosen, killed, n_mutants = _adequate(runner, task, outputs, options)
    have = {outputs[i][1] for i in chosen}
    for i, (_, out, _) in enumerate(outputs):  # then new outputs, then anything
        if len(chosen) < options.max_tests and i not in chosen and out not in have:
            chosen.append(i)
            have.add(out)
    for i in range(len(outputs)):
        if len(chosen) < options.max_tests and i not in chosen:
            chosen.append(i)
    tests = [
        TestCase(
            kind="stdio",
            name=f"{'given' if outputs[i][0] in task.inputs else 'mutation'}-{n}",
            input=outputs[i][0],
            expected=outputs[i][1].decode(errors="replace"),
            compare=task.compare,
            options=dict(task.compare_options),
        )
        for n, i in enumerate(chosen)
    ]
    # Unkilled mutants count against the score (no holdout estimates which are equivalent):
    # a lower bound.
    score = killed / n_mutants if n_mutants else None
    slowest = max(outputs[i][2] for i in chosen)
    quality = {
        "candidates": dict(Counter(kinds)),
        "kept": len(outputs),
        "dropped": dict(sorted(dropped.items())),
        "dropped_examples": dict(sorted(examples_of.items())),
        "validator": bool(task.validator),
        "mutants": n_mutants,
        "mutants_killed": killed,
        "mutants_killable": n_mutants,  # every mutant counts: no holdout to spot equivalents
        "mutation_score": None if score is None else round(score, 4),
        "tests": len(tests),
        "time_s_per_test": time_limit(slowest),
        "seed": options.seed,
        **gate(score, options.min_mutation_score),
    }
    return Problem(
        task.task_id,
        tests,
        limits=Limits(time_s=time_limit(slowest), memory_mb=limits.memory_mb),
        checker=task.checker,
        references=[task.reference],
        metadata={**task.metadata, "quality": quality},
    )


def time_limit(cpu_s: float) -> float:
    """4 x ``cpu_s`` (the reference's CPU time), at least 1 s, rounded up to a power of two
    so that small timing noise gives the same suite."""
    limit = 1.0
    while limit < 4.0 * cpu_s:
        limit *= 2
    return limit


def _adequate(
    runner: Runner, task: StdinTask, outputs: list[tuple[str, bytes, float]], options: StdinOptions
) -> tuple[list[int], int, int]:
    """(inputs that tell some mutant apart, mutants killed, mutants made): each mutant of a
    Python reference (its top-level code too) runs on the inputs in order until one output
    differs."""
    if task.language != "python":
        return [], 0, 0
    seed = seed_for(options.seed, task.task_id, "mut")
    muts = mutants(task.reference, seed, options.max_mutants, whole_module=True)
    chosen: list[int] = []
    killed = 0
    for m in muts:
        for i, (text, want, cpu) in enumerate(outputs):
            cap = replace(options.run_limits, time_s=max(1.0, 10 * cpu))
            got = _run(runner, m.source, "python", text, cap)
            if _why(got) != "ok" or got.stdout != want:
                killed += 1
                if i not in chosen:
                    chosen.append(i)
                break
    return chosen, killed, len(muts)


def kattis_tasks(path: str | Path) -> list[StdinTask]:
    """Stdin tasks from a Kattis package (or a folder of them): its test inputs, its first
    accepted Python submission as the reference, its input validator
    (``input_validators/`` or ``input_format_validators/``), limits and output checking."""
    from ..formats import kattis

    root = Path(path)
    packages = (
        [root]
        if (root / "data").is_dir()
        else [p for p in sorted(root.iterdir()) if (p / "data").is_dir()]
        if root.is_dir()
        else []
    )
    if not packages:
        raise ValidationError("dataset", f"{root}: no Kattis package (a folder with data/)")
    out = []
    for package in packages:
        problem = kattis.load_package(package)
        if not problem.references:
            raise ValidationError(
                "submissions", f"{package.name}: no accepted Python submission to use as reference"
            )
        validator, language = "", "python"
        for folder in ("input_validators", "input_format_validators"):
            found = sorted(
                p
                for p in (package / folder).rglob("*")
                if p.is_file() and p.suffix in kattis.LANGUAGES
            )
            if found:
                validator, language = found[0].read_text(), kattis.LANGUAGES[found[0].suffix]
                break
        first = problem.tests[0]
        out.append(
            StdinTask(
                problem.id,
                problem.references[0],
                tuple(t.input for t in problem.tests),
                validator=validator,
                validator_language=language,
                compare=first.compare,
                compare_options=dict(first.options),
                checker=problem.checker,
                metadata=dict(problem.metadata),
            )
        )
    return out
