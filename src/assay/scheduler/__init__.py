"""Scheduling: what runs next, and what need not run at all.

The scheduler orders opaque tasks (it knows nothing of languages or tests): priority classes,
fairness between callers, longest-first inside a batch from learned runtime estimates,
bounded admission, and a result cache keyed by content hash.
"""

from __future__ import annotations

from ..errors import Overloaded
from .cache import ResultCache
from .estimates import RuntimeEstimator
from .queue import FairQueue, Task

#: Priority classes (lower runs first). Any int works; these are the named ones.
HIGH = 0
NORMAL = 1
LOW = 2

__all__ = [
    "HIGH",
    "LOW",
    "NORMAL",
    "FairQueue",
    "Overloaded",
    "ResultCache",
    "RuntimeEstimator",
    "Task",
]
