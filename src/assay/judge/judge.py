"""Judging a submission against a problem's tests, with the comparison on the trusted side.

Only raw outputs come back from the sandbox; expected answers never enter it.
"""

from __future__ import annotations

from dataclasses import replace

from .. import languages
from ..errors import ValidationError
from ..runner import Runner
from ..types import ExecResult
from . import compare, harness
from ._group import TestGroup
from .calls import PYTHON_OPS, run_calls
from .checker import check
from .native import run_native_scripts
from .scripts import run_scripts
from .types import STATUS_TO_VERDICT, Judgement, Problem, Submission, TestCase, TestResult


class Judge:
    """Runs submissions on a :class:`Runner` and turns raw outputs into verdicts."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def judge(self, submission: Submission, stop_on_failure: bool = False) -> Judgement:
        """Judge ``submission``. With ``stop_on_failure``, the tests run in index order and
        none after the first one that fails: the verdict is the same as with every test
        run, ``tests`` holds the tests up to the failure, and ``passed`` counts the tests
        before it (``total`` is the problem's count either way). A problem with an
        ``image`` is judged in that image's sandbox pool, one with an ``isolation`` in that
        tier (``Problem.placement``)."""
        with self.runner.placed(submission.problem.placement) as runner:
            judge = self if runner is self.runner else Judge(runner)
            return judge._judge(submission, stop_on_failure)

    def _judge(self, submission: Submission, stop_on_failure: bool) -> Judgement:
        problem = submission.problem
        validate(submission)
        code = submission.code.encode() if isinstance(submission.code, str) else submission.code
        indexed = list(enumerate(problem.tests))
        # Every test run: tests of a kind share one sandbox run (calls, scripts). Stop on
        # failure: consecutive tests of a kind do, so that index order is kept.
        groups = _runs_of_a_kind(indexed) if stop_on_failure else _by_kind(indexed)
        results: list[TestResult] = []
        for kind, tests in groups:
            if stop_on_failure and any(r.verdict != "accepted" for r in results):
                break
            results.extend(self._run(kind, tests, submission, code, stop_on_failure))
        results.sort(key=lambda r: r.index)
        if stop_on_failure:
            failed = next((k for k, r in enumerate(results) if r.verdict != "accepted"), None)
            if failed is not None:
                results = results[: failed + 1]
        return _overall(results, len(problem.tests))

    def _run(
        self,
        kind: str,
        tests: list[tuple[int, TestCase]],
        submission: Submission,
        code: bytes,
        stop_on_failure: bool,
    ) -> list[TestResult]:
        limits, network = submission.problem.limits, submission.problem.network
        group = TestGroup(self.runner, code, tests, limits, stop_on_failure, network)
        if kind == "call":
            return run_calls(group)
        if kind == "script" and submission.language == "python":
            return run_scripts(group)
        if kind == "script":
            text = code.decode(errors="replace")
            lang = languages.get(submission.language).name
            return run_native_scripts(self.runner, text, lang, tests, limits, network)
        results: list[TestResult] = []
        for i, test in tests:
            result = self.runner.run(
                submission.code, submission.language, test.input, limits, network=network
            )
            tr = self._grade(submission.problem, i, test, result)
            results.append(tr)
            if tr.verdict == "compile_error":
                break  # every test would say the same
            if stop_on_failure and tr.verdict != "accepted":
                break
        return results

    def _grade(
        self, problem: Problem, index: int, test: TestCase, result: ExecResult
    ) -> TestResult:
        common = {
            "cpu_s": result.cpu_s,
            "wall_s": result.wall_s,
            "peak_memory_bytes": result.peak_memory_bytes,
        }
        if result.status != "ok":
            tail = result.stderr.decode(errors="replace")[-500:]
            return TestResult(index, STATUS_TO_VERDICT[result.status], message=tail, **common)  # type: ignore[arg-type]
        if problem.checker is not None:
            return check(self.runner, problem, index, test, result)
        assert test.expected is not None
        ok, message = compare.get(test.compare)(result.stdout_text, test.expected, test.options)
        return TestResult(index, "accepted" if ok else "wrong_answer", message=message, **common)  # type: ignore[arg-type]


def _kind(test: TestCase) -> str:
    return "script" if test.kind == "pytest" else test.kind


def _by_kind(tests: list[tuple[int, TestCase]]) -> list[tuple[str, list[tuple[int, TestCase]]]]:
    """Calls, then scripts (and pytest files), then stdio tests, each group in index order."""
    return [
        (kind, group)
        for kind in ("call", "script", "stdio")
        if (group := [(i, t) for i, t in tests if _kind(t) == kind])
    ]


def _runs_of_a_kind(
    tests: list[tuple[int, TestCase]],
) -> list[tuple[str, list[tuple[int, TestCase]]]]:
    """Maximal runs of consecutive tests of one kind, in index order."""
    groups: list[tuple[str, list[tuple[int, TestCase]]]] = []
    for i, t in tests:
        if groups and groups[-1][0] == _kind(t):
            groups[-1][1].append((i, t))
        else:
            groups.append((_kind(t), [(i, t)]))
    return groups


def validate(submission: Submission) -> None:
    """Raise :class:`ValidationError` naming the field if ``submission`` cannot be judged."""
    problem = submission.problem
    for i, test in enumerate(problem.tests):
        if test.kind == "call":
            if "fn_name" not in test.options or not isinstance(test.options.get("args"), list):
                raise ValidationError(
                    f"tests[{i}].options", "a call test needs fn_name and a list of args"
                )
            if submission.language != "python":
                raise ValidationError("language", "call tests are judged for Python submissions")
            _validate_assertion(i, test.options)
        elif test.kind in ("script", "pytest"):
            if not test.code:
                raise ValidationError(f"tests[{i}].code", "a script test needs its test program")
            if submission.language != "python":
                if test.kind == "pytest":
                    raise ValidationError("language", "pytest tests need a Python submission")
                harness.get(languages.get(submission.language).name)
        elif test.kind != "stdio":
            raise ValidationError(
                f"tests[{i}].kind", f"{test.kind!r} tests are not supported by this judge yet"
            )
        else:
            if test.expected is None and problem.checker is None:
                raise ValidationError(
                    f"tests[{i}].expected", "a stdio test needs an expected output"
                )
            compare.get(test.compare)


def _validate_assertion(i: int, options: dict[str, object]) -> None:
    op = options.get("python_op")
    if op is not None and op not in PYTHON_OPS:
        raise ValidationError(f"tests[{i}].options.python_op", f"must be one of {PYTHON_OPS}")
    if op in ("abs<", "abs<="):
        tol = options.get("tol")
        if type(tol) not in (int, float):
            raise ValidationError(f"tests[{i}].options.tol", f"{op} needs a number")
    if options.get("convert") not in (None, "tuple"):
        raise ValidationError(f"tests[{i}].options.convert", "must be 'tuple' if given")


def combine(
    parts: list[tuple[list[int], Judgement]], total: int, *, stop_on_failure: bool = False
) -> Judgement:
    """One judgement from the judgements of disjoint subsets of a problem's tests.

    ``parts`` pairs each partial judgement with the original indices of the tests it judged
    (its test ``i`` is the problem's test ``indices[i]``). Used when a submission's tests are
    spread over several sandboxes. With ``stop_on_failure`` the tests after the first that
    failed are dropped, as if they had run in order in one sandbox (one meaning of passed).
    """
    broken = next((j for _, j in parts if j.verdict == "sandbox_error"), None)
    results: list[TestResult] = []
    for indices, judgement in parts:
        for r in judgement.tests:
            if not 0 <= r.index < len(indices):
                raise ValueError(f"test index {r.index} outside its part of {len(indices)}")
            results.append(replace(r, index=indices[r.index]))
    results.sort(key=lambda r: r.index)
    if stop_on_failure:
        first = next((i for i, r in enumerate(results) if r.verdict != "accepted"), None)
        if first is not None:
            results = results[: first + 1]
    if broken is not None:
        return Judgement("sandbox_error", results, None, broken.reason, total=total)
    return _overall(results, total)


def _overall(results: list[TestResult], total: int) -> Judgement:
    """First failing test decides; any sandbox_error makes the run unusable (reward None)."""
    if any(r.verdict == "sandbox_error" for r in results):
        bad = next(r for r in results if r.verdict == "sandbox_error")
        return Judgement(
            "sandbox_error",
            results,
            None,
            f"test {bad.index}: infrastructure failure: {bad.message}",
            total=total,
        )
    for r in results:
        if r.verdict != "accepted":
            reason = f"test {r.index}: {r.verdict}: {r.message}".rstrip(": ")
            return Judgement(r.verdict, results, 0.0, reason, total=total)
    if len(results) < total:
        return Judgement("sandbox_error", results, None, "not every test ran", total=total)
    return Judgement("accepted", results, 1.0, f"all {total} tests passed", total=total)
