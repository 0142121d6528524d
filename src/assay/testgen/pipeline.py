"""From a task's text and reference to a checked, reduced suite of call tests.

1. Inputs: docstring examples, boundary values, type-aware mutation and hypothesis draws
   (a *pool*), plus a *holdout* drawn with other seeds, used only to estimate which mutants
   are equivalent. Nothing is read from the dataset's own tests.
2. Validity and oracle: the reference answers every input in the sandbox, under the
   task's contract; an input it rejects, raises on, or cannot answer in time or memory is
   dropped with the reason. A second run, in a fresh interpreter with another hash seed,
   must give the same answers: an input whose answer differs is flaky and dropped.
3. Cross-validation: other references answer the same inputs (ambiguous inputs dropped,
   suspect references reported).
4. Adequacy: AST mutants of the reference run on pool and holdout; line coverage of the
   reference per input. A greedy multi-cover keeps every mutant kill and covered line; the
   suite is then filled up to ``max_tests`` with inputs whose answers it does not have yet.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from ..errors import SandboxError, ValidationError
from ..formats.assay_suite import encode_value
from ..judge import Problem, TestCase, values
from ..runner import Runner
from ..types import Limits
from . import oracle, strategies
from .crossval import agree, key
from .mutants import mutants
from .reduce import cover
from .report import gate
from .signature import signature
from .stdin import StdinOptions, StdinTask, generate_stdin, time_limit

#: Fields a task row may carry. Test fields of datasets (``base_input``, ``plus_input``,
#: ``test``) are deliberately not among them: the generator never reads them.
TASK_FIELDS = ("task_id", "prompt", "entry_point", "reference", "references", "contract", "atol")


@dataclass(frozen=True, slots=True)
class Task:
    task_id: str
    prompt: str
    entry_point: str
    reference: str
    references: tuple[str, ...] = ()  # further references, for cross-validation
    contract: str = ""
    atol: float = 0.0


def task_from_row(row: dict[str, Any]) -> Task:
    """A task from a row ``{task_id, prompt, entry_point, reference}`` (``reference`` may
    be ``canonical_solution``, the body after the prompt, as in HumanEval)."""
    for name in ("task_id", "prompt", "entry_point"):
        if not isinstance(row.get(name), str) or not row[name]:
            raise ValidationError(name, f"must be a non-empty string (task {row.get('task_id')!r})")
    ref = row.get("reference")
    body = row.get("canonical_solution")
    if ref is None and isinstance(body, str):
        # HumanEval's is the body after the prompt; MBPP+'s is a whole program.
        whole = re.search(rf"^def {re.escape(row['entry_point'])}\s*\(", body, re.M)
        ref = body if whole else row["prompt"] + body
    if not isinstance(ref, str) or not ref.strip():
        raise ValidationError("reference", f"task {row['task_id']!r} needs a reference solution")
    refs = row.get("references") or []
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise ValidationError("references", "must be a list of program texts")
    contract = row.get("contract") or ""
    if not isinstance(contract, str):
        raise ValidationError("contract", "must be Python statements (a string)")
    return Task(
        row["task_id"],
        row["prompt"],
        row["entry_point"],
        ref,
        tuple(r for r in refs if r != ref),
        contract,
        float(row.get("atol") or 0.0),
    )


@dataclass(frozen=True, slots=True)
class Options:
    seed: int = 0
    max_tests: int = 50
    mutations: int = 150
    hypothesis: int = 60
    holdout_mutations: int = 60
    holdout_hypothesis: int = 40
    max_mutants: int = 60
    cover_k: int = 2
    refill_below: int = 100
    refill: int = 250
    fill: bool = True
    call_s: float = oracle.CALL_S
    #: Inputs on which the reference needs more CPU seconds than this are dropped ("slow"):
    #: a correct but plainer program would then be judged on speed, not on its answers.
    slow_s: float = 0.05
    min_mutation_score: float = 0.0
    rtol: float = 1e-7


_NO_ANSWER = object()  # equal only to itself: two references that both fail agree


def _input_key(args: tuple[Any, ...]) -> str | None:
    try:
        return json.dumps([encode_value(a) for a in args])
    except (ValidationError, ValueError, TypeError, RecursionError):
        return None


def candidates(
    task: Task, options: Options, dropped: Counter[str] | None = None
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """(inputs, the strategy of each: holdout inputs are marked ``holdout``), deduplicated;
    inputs with an int larger than the task's cap (:func:`strategies.int_cap`) are left out
    and counted in ``dropped["large_int"]``."""
    sig = signature(task.prompt, task.reference, task.entry_point, task.contract)
    cap = strategies.int_cap(sig)
    tid = task.task_id
    groups: list[tuple[str, list[tuple[Any, ...]]]] = [
        ("example", [tuple(a) for a in sig.examples]),
        (
            "boundary",
            strategies.boundary(sig, random.Random(strategies.seed_for(options.seed, tid, "b"))),
        ),
        (
            "mutation",
            strategies.mutation(
                sig, random.Random(strategies.seed_for(options.seed, tid, "m")), options.mutations
            ),
        ),
        (
            "hypothesis",
            strategies.from_types(
                sig, strategies.seed_for(options.seed, tid, "h"), options.hypothesis
            ),
        ),
    ]
    holdout = [
        (
            "holdout",
            strategies.mutation(
                sig,
                random.Random(strategies.seed_for(options.seed, tid, "hm")),
                options.holdout_mutations,
            ),
        ),
        (
            "holdout",
            strategies.from_types(
                sig, strategies.seed_for(options.seed, tid, "hh"), options.holdout_hypothesis
            ),
        ),
    ]
    inputs: list[tuple[Any, ...]] = []
    kinds: list[str] = []
    seen: set[str] = set()
    for kind, items in groups + holdout:
        for args in items:
            k = _input_key(args)
            if k is None or k in seen:
                continue
            seen.add(k)
            if strategies.magnitude(args) > cap:
                if dropped is not None:
                    dropped["large_int"] += 1
                continue
            inputs.append(args)
            kinds.append(kind)
    return inputs, kinds


def generate(runner: Runner, task: Task, options: Options | None = None) -> Problem:
    """The task's generated suite as a :class:`Problem`; ``metadata["quality"]`` is its
    quality report (see :mod:`assay.testgen.report`)."""
    options = options or Options()
    sig = signature(task.prompt, task.reference, task.entry_point, task.contract)
    dropped: Counter[str] = Counter()
    fresh, fresh_kinds = candidates(task, options, dropped)
    cap = strategies.int_cap(sig)
    inputs: list[tuple[Any, ...]] = []
    kinds: list[str] = []
    calls: list[list[Any]] = []
    seen = {_input_key(a) for a in fresh}
    atol = task.atol or 1e-6
    examples_of: dict[str, str] = {}
    first: list[oracle.Answer] = []
    kept: list[int] = []
    cpu: dict[int, float] = {}

    def drop(reason: str, message: str) -> None:
        dropped[reason] += 1
        examples_of.setdefault(reason, message[:200])

    def answer(new: list[tuple[Any, ...]], new_kinds: list[str]) -> None:
        """The reference's answers on ``new``, twice (two hash seeds); keeps the stable ones."""
        base = len(inputs)
        inputs.extend(new)
        kinds.extend(new_kinds)
        calls.extend(list(a) for a in new)
        got = oracle.answers(
            runner,
            task.reference,
            task.entry_point,
            calls[base:],
            sig.contract_source,
            trace=True,
            call_s=options.call_s,
        )
        first.extend(got)
        ok = [base + j for j, a in enumerate(got) if a.status == "ok"]
        for a in got:
            if a.status != "ok":
                drop(a.status, a.message)
        again = oracle.answers(
            runner,
            task.reference,
            task.entry_point,
            [calls[i] for i in ok],
            sig.contract_source,
            hash_seed=oracle.OTHER_HASH_SEED,
            call_s=options.call_s,
        )
        for i, b in zip(ok, again, strict=True):
            if b.status != "ok" or not values.equal(b.value, first[i].value, atol, options.rtol):
                drop("flaky", f"second run: {b.status} {b.message}".strip())
                continue
            if b.cpu_s > options.slow_s:  # a unit test, not a benchmark: keep limits tight
                drop("slow", f"the reference took {b.cpu_s:.3f} s of CPU")
                continue
            kept.append(i)
            cpu[i] = b.cpu_s

    answer(fresh, fresh_kinds)
    valid = [inputs[i] for i in kept if kinds[i] != "holdout"]
    if valid and len(valid) < options.refill_below:
        # Few inputs satisfy the contract: mutate the valid ones (EvalPlus grows its corpus
        # from valid inputs only).
        rng = random.Random(strategies.seed_for(options.seed, task.task_id, "refill"))
        more = []
        for args in strategies.mutation(sig, rng, options.refill, corpus=valid):
            k = _input_key(args)
            if k is not None and k not in seen:
                seen.add(k)
                if strategies.magnitude(args) > cap:
                    dropped["large_int"] += 1
                else:
                    more.append(args)
        answer(more, ["refill"] * len(more))
    ambiguous: list[int] = []
    suspects: list[int] = []
    if task.references and kept:
        others = [
            oracle.answers(
                runner,
                r,
                task.entry_point,
                [calls[i] for i in kept],
                sig.contract_source,
                call_s=options.call_s,
            )
            for r in task.references
        ]
        table = [[first[i].value for i in kept]] + [
            [a.value if a.status == "ok" else _NO_ANSWER for a in o] for o in others
        ]
        verdict = agree(table, atol, options.rtol)
        ambiguous = [kept[j] for j in verdict.ambiguous]
        suspects = list(verdict.suspects)
        for _ in ambiguous:
            drop("ambiguous", "the references disagree on this input")
        kept = [i for i in kept if i not in set(ambiguous)]
    pool_kept = [i for i in kept if kinds[i] != "holdout"]
    if not pool_kept:
        raise ValidationError(
            "reference", f"{task.task_id}: no generated input has a usable answer ({dict(dropped)})"
        )
    # Mutants, run on the pool and the holdout (pool first).
    muts = mutants(
        task.reference, strategies.seed_for(options.seed, task.task_id, "mut"), options.max_mutants
    )
    order = pool_kept + [i for i in kept if kinds[i] == "holdout"]
    caps = [min(options.call_s, max(0.1, 20 * cpu[i] + 0.05)) for i in order]
    kill = oracle.kills(
        runner,
        [m.source for m in muts],
        task.entry_point,
        [calls[i] for i in order],
        [first[i].value for i in order],
        caps,
        atol,
        options.rtol,
        max_kills=options.cover_k,
    )
    pool_set = set(pool_kept)
    stillborn = [m for m, k in enumerate(kill) if -1 in k.killed_by]
    killable = [m for m, k in enumerate(kill) if k.killed_by and -1 not in k.killed_by]
    hits: list[set[Any]] = [set() for _ in pool_kept]
    where = {i: j for j, i in enumerate(pool_kept)}
    for m in killable:
        for j in kill[m].killed_by:
            i = order[j]
            if i in pool_set:
                hits[where[i]].add(("m", m))
    for j, i in enumerate(pool_kept):
        hits[j] |= {("l", line) for line in first[i].lines}
    # The docstring's examples, then boundary values (cheap, and where wrong code often
    # fails though no mutant shows it), at most half the suite.
    required = [where[i] for i in pool_kept if kinds[i] == "example"]
    edges = [where[i] for i in pool_kept if kinds[i] == "boundary"]
    required += edges[: max(0, options.max_tests // 2 - len(required))]
    chosen = cover([frozenset(h) for h in hits], options.cover_k, required)
    cover_size = len(chosen)
    if options.fill and len(chosen) < options.max_tests:
        have = {key(first[pool_kept[j]].value) for j in chosen}
        for j, i in enumerate(pool_kept):  # new answers first, then anything
            if len(chosen) >= options.max_tests:
                break
            if j not in chosen and key(first[i].value) not in have:
                chosen.append(j)
                have.add(key(first[i].value))
        for j in range(len(pool_kept)):
            if len(chosen) >= options.max_tests:
                break
            if j not in chosen:
                chosen.append(j)
    chosen = chosen[: max(options.max_tests, len(required))]
    suite = [pool_kept[j] for j in chosen]
    killed_suite = {m for j in chosen for (tag, m) in hits[j] if tag == "m"}
    lines_suite = {m for j in chosen for (tag, m) in hits[j] if tag == "l"}
    score = len(killed_suite) / len(killable) if killable else None
    tests = [
        TestCase(
            kind="call",
            name=f"{kinds[i]}-{n}",
            options={
                "fn_name": task.entry_point,
                "args": calls[i],
                "atol": atol,
                "rtol": options.rtol,
            },
            expected_value=values.plain(first[i].value),
        )
        for n, i in enumerate(suite)
    ]
    if dropped["large_int"]:
        examples_of["large_int"] = f"an int larger than {cap} (more than the prompt writes)"
    quality = {
        "candidates": dict(Counter(k for k in kinds if k != "holdout")),
        "holdout": kinds.count("holdout"),
        "kept": len(pool_kept),
        "dropped": dict(sorted(dropped.items())),
        "dropped_examples": dict(sorted(examples_of.items())),
        "ambiguous": len(ambiguous),
        "references": 1 + len(task.references),
        "suspect_references": suspects,
        "mutants": len(muts),
        "mutants_stillborn": len(stillborn),
        "mutants_killed": len(killed_suite),
        "mutants_killable": len(killable),
        "mutants_likely_equivalent": len(muts) - len(stillborn) - len(killable),
        "mutation_score": None if score is None else round(score, 4),
        "lines": len(sig.statement_lines),
        "lines_covered": len(lines_suite & sig.statement_lines),
        "coverage": round(len(lines_suite & sig.statement_lines) / len(sig.statement_lines), 4)
        if sig.statement_lines
        else None,
        "cover_size": cover_size,
        "tests": len(tests),
        "seed": options.seed,
        **gate(score, options.min_mutation_score),
    }
    limits = Limits(time_s=time_limit(sum(cpu[i] for i in suite)), memory_mb=1024)
    return Problem(
        task.task_id,
        tests,
        limits=limits,
        references=[task.reference, *task.references],
        metadata={"prompt": task.prompt, "entry_point": task.entry_point, "quality": quality},
    )


def with_gate(problem: Problem, min_mutation_score: float) -> Problem:
    """``problem`` with its quality report's gate re-evaluated at ``min_mutation_score``."""
    q = dict(problem.metadata.get("quality") or {})
    q.update(gate(q.get("mutation_score"), min_mutation_score))
    return replace(problem, metadata={**problem.metadata, "quality": q})


def generate_all(
    runner: Runner,
    tasks: Sequence[Task | StdinTask],
    options: Options | None = None,
    workers: int = 2,
    on_done: Callable[[str, Problem | str], None] | None = None,
) -> tuple[list[Problem], dict[str, str]]:
    """Suites for many tasks (function-call or stdin ones), ``workers`` at a time, in the
    order of ``tasks``; and the tasks that got none, with the reason (one task's failure
    never stops the others)."""
    o = options or Options()
    for_stdin = StdinOptions(
        seed=o.seed, max_tests=o.max_tests, min_mutation_score=o.min_mutation_score
    )

    def one(task: Task | StdinTask) -> Problem | str:
        got: Problem | str
        try:
            if isinstance(task, StdinTask):
                got = generate_stdin(runner, task, for_stdin)
            else:
                got = generate(runner, task, o)
        except (ValidationError, SandboxError) as exc:
            got = str(exc)
        except Exception as exc:  # a generator bug on one task must not lose the others
            got = f"internal error: {type(exc).__name__}: {exc}"
        if on_done is not None:
            on_done(task.task_id, got)
        return got

    problems: list[Problem] = []
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for task, got in zip(tasks, pool.map(one, tasks), strict=True):
            if isinstance(got, str):
                failed[task.task_id] = got
            else:
                problems.append(got)
    return problems, failed
