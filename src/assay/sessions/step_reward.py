"""The reward of one verified step of an agent episode.

``step_reward`` = ``pass_delta`` * (passed - passed before) / total
                - ``regression`` * newly failing / total
                - ``protected`` * (1 if a protected path differs that did not before)
                - ``unparseable`` * (1 if a changed Python file does not parse that did before)
                - ``diff_excess`` * the rise of min(1, max(0, diff lines / reference lines - 1))
                + ``diagnosis`` * the rise of the episode's best diagnosis score

Defaults: 1.0, 0.5, 1.0, 0.25, 0.1, 0.2. "Before" is the previous verification of this
episode (a fork inherits its parent's), or the task's own workspace for the first one. The
last three terms need a reference patch (without one they are 0).

**No term pays twice for one thing** (the rule that keeps rewards from being farmed by
repetition): every term is paid for a change, and verifying an unchanged workspace again
pays 0. ``pass_delta`` and ``regression`` pay for tests that changed state since the
previous verification; a regression costs more than a failing test gains back (its
pass-rate loss plus the regression term), so breaking a working test and fixing it again
is a loss. ``protected`` and ``unparseable`` are charged when a path enters that state
(editing a protected file again after undoing it is charged again; keeping it is not
charged again). ``diff_excess`` is charged for its rise over the previous verification.
``diagnosis`` pays the rise of the best score of the episode, so its sum over an episode is
at most its weight, however often the agent states a diagnosis.

The diagnosis (what the agent blames) is ``{"files": [...], "functions": [...], "lines":
{"path": [n, ...]}}`` (``lines`` may also be strings ``"path:12"`` or ``"path:10-14"``);
its score is the mean, over the levels it states, of the F1 between what it blames and what
the reference patch changes (files, the functions enclosing changed lines, the changed
lines of the original files).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import ValidationError
from ..tasks.patch import PatchLines


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the step-reward terms (see the module docstring)."""

    pass_delta: float = 1.0
    regression: float = 0.5
    protected: float = 1.0
    unparseable: float = 0.25
    diff_excess: float = 0.1
    diagnosis: float = 0.2

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Paid:
    """What an episode's state-based terms have been paid for so far (see the rule in the
    module docstring); a fork's copy continues its parent's."""

    protected: frozenset[str] = frozenset()
    unparseable: frozenset[str] = frozenset()
    diff_excess: float = 0.0
    best_diagnosis: float = 0.0

    def pay(self, state: Mapping[str, Any]) -> dict[str, float]:
        """The terms of this step for the workspace's ``state`` (``protected`` and
        ``unparseable``: the paths in that state; ``diff_excess``; ``diagnosis``: this
        step's score), and the state remembered for the next step."""
        protected, unparseable = state["protected"], state["unparseable"]
        excess, diag = float(state["diff_excess"]), float(state["diagnosis"])
        terms = {
            "protected": 1.0 if protected - self.protected else 0.0,
            "unparseable": 1.0 if unparseable - self.unparseable else 0.0,
            "diff_excess": max(0.0, excess - self.diff_excess),
            "diagnosis": max(0.0, diag - self.best_diagnosis),
        }
        self.protected, self.unparseable, self.diff_excess = protected, unparseable, excess
        self.best_diagnosis = max(self.best_diagnosis, diag)
        return terms


def step_reward(terms: Mapping[str, float], weights: RewardWeights) -> float:
    """Combine the terms (each in [-1, 1] or [0, 1]) with ``weights``."""
    return round(
        weights.pass_delta * terms["pass_delta"]
        - weights.regression * terms["regression"]
        - weights.protected * terms["protected"]
        - weights.unparseable * terms["unparseable"]
        - weights.diff_excess * terms["diff_excess"]
        + weights.diagnosis * terms["diagnosis"],
        6,
    )


def _f1(blamed: set[Any], truth: set[Any]) -> float:
    if not blamed or not truth:
        return 0.0
    hit = len(blamed & truth)
    if not hit:
        return 0.0
    precision, recall = hit / len(blamed), hit / len(truth)
    return 2 * precision * recall / (precision + recall)


def _functions(files: Mapping[str, bytes], lines: Mapping[str, set[int]]) -> set[str]:
    """Names of the functions (and methods) of the original files enclosing changed lines."""
    out: set[str] = set()
    for path, changed in lines.items():
        try:
            tree = ast.parse(files.get(path, b""))
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # nested too deeply
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                end = node.end_lineno or node.lineno
                if any(node.lineno <= n <= end for n in changed):
                    out.add(node.name)
    return out


def _blamed_lines(value: object) -> set[tuple[str, int]]:
    out: set[tuple[str, int]] = set()
    if isinstance(value, Mapping):
        for path, nums in value.items():
            if not isinstance(nums, list) or not all(isinstance(n, int) for n in nums):
                raise ValidationError("diagnosis.lines", f"{path!r}: a list of line numbers")
            out |= {(str(path), n) for n in nums}
        return out
    if not isinstance(value, list):
        raise ValidationError("diagnosis.lines", "an object path -> [lines] or 'path:n' strings")
    for item in value:
        path, _, span = str(item).rpartition(":")
        lo, _, hi = span.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise ValidationError(
                "diagnosis.lines", f"{item!r} is not 'path:n' or 'path:a-b'"
            ) from None
        if not path or last - first > 10_000:
            raise ValidationError("diagnosis.lines", f"{item!r} is not 'path:n' or 'path:a-b'")
        out |= {(path, n) for n in range(first, last + 1)}
    return out


def check_diagnosis(diagnosis: object) -> dict[str, Any] | None:
    """Validate a diagnosis; the error names the bad field."""
    if diagnosis is None:
        return None
    if not isinstance(diagnosis, Mapping):
        raise ValidationError("diagnosis", "must be an object {files?, functions?, lines?}")
    bad = set(diagnosis) - {"files", "functions", "lines"}
    if bad:
        raise ValidationError(f"diagnosis.{sorted(bad)[0]}", "unknown field")
    for key in ("files", "functions"):
        value = diagnosis.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise ValidationError(f"diagnosis.{key}", "must be a list of strings")
    if diagnosis.get("lines") is not None:
        _blamed_lines(diagnosis["lines"])
    return dict(diagnosis)


def diagnosis_score(
    diagnosis: Mapping[str, Any] | None, reference: PatchLines | None, files: Mapping[str, bytes]
) -> float:
    """Overlap in [0, 1] of the agent's diagnosis with what the reference patch changes."""
    if not diagnosis or reference is None or not reference.lines:
        return 0.0
    scores = []
    if diagnosis.get("files") is not None:
        scores.append(
            _f1({f.removeprefix("/work/") for f in diagnosis["files"]}, set(reference.lines))
        )
    if diagnosis.get("functions") is not None:
        names = {f.rpartition("::")[2].rpartition(".")[2] for f in diagnosis["functions"]}
        scores.append(_f1(names, _functions(files, reference.lines)))
    if diagnosis.get("lines") is not None:
        truth = {(p, n) for p, nums in reference.lines.items() for n in nums}
        blamed = {(p.removeprefix("/work/"), n) for p, n in _blamed_lines(diagnosis["lines"])}
        scores.append(_f1(blamed, truth))
    return round(sum(scores) / len(scores), 6) if scores else 0.0


__all__ = ["Paid", "RewardWeights", "check_diagnosis", "diagnosis_score", "step_reward"]
