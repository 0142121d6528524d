"""Test generation and quality control (offline): inputs, oracles, cross-validation,
mutation score, coverage and reduction. See :mod:`assay.testgen.pipeline` (function-call
problems) and :mod:`assay.testgen.stdin` (stdin problems with an input validator)."""

from .crossval import agree, dual_agreement
from .pipeline import Options, Task, generate, generate_all, task_from_row
from .reduce import cover
from .stdin import StdinOptions, StdinTask, generate_stdin, kattis_tasks

__all__ = [
    "Options",
    "StdinOptions",
    "StdinTask",
    "Task",
    "agree",
    "cover",
    "dual_agreement",
    "generate",
    "generate_all",
    "generate_stdin",
    "kattis_tasks",
    "task_from_row",
]
