"""Trainer integrations: Assay as the reward of veRL and TRL runs.

- :func:`parse_ground_truth`: the common dataset dialects of code tests -> :class:`Problem`.
- :func:`extract_code`: the program inside a model's response.
- :mod:`assay.integrations.verl`: ``compute_score`` / ``compute_score_batch`` (+ async).
- :mod:`assay.integrations.trl`: ``reward_func`` / ``make_reward_func`` (+ async).

Both adapters take the fields of one keyword-only :class:`RewardConfig` (as keywords or as
``config=``) and share one judging path: in-process on a shared :class:`~assay.LocalExecutor`
by default, or on an ``assay serve`` with ``url=``. Neither imports its trainer, so they cost nothing to import.
"""

from __future__ import annotations

from ._judging import RewardConfig, default_executor
from .extract import extract_code
from .groundtruth import parse_ground_truth

__all__ = ["RewardConfig", "default_executor", "extract_code", "parse_ground_truth"]
