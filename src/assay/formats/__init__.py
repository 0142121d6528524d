"""Dataset formats, each normalised to :class:`assay.judge.Problem`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..judge import Problem
from ..runner import Runner
from . import (
    acecoder,
    apps,
    assay_suite,
    codecontests,
    evalplus,
    humaneval,
    humanevalx,
    kattis,
    kodcode,
    livecodebench,
    mbpp,
    multiple,
    prime,
)
from ._io import read_records

FORMATS = (
    "humaneval",
    "humanevalplus",
    "mbpp",
    "mbppplus",
    "humaneval-x",
    "multipl-e",
    "apps",
    "codecontests",
    "prime",
    "acecoder",
    "kodcode",
    "livecodebench",
    "kattis",
    "assay",
)

#: Formats whose records carry their own time limits; for the others ``assay eval`` derives
#: a limit from the reference (:func:`assay.judge.limits.derive_time_limit`) by default.
GIVEN_LIMITS = frozenset({"codecontests", "kattis", "assay"})


def canonical(fmt: str) -> str:
    """The format called ``fmt``, case-insensitively and with or without dashes
    (``MBPP``, ``HumanEval-X``, ``humanevalx``); an unknown name is an error listing them."""
    key = fmt.strip().lower().replace("_", "-")
    for name in (*FORMATS, "taco"):
        if key in (name, name.replace("-", "")):
            return name
    raise ValidationError("format", f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def load(
    path: str | Path,
    fmt: str,
    tests: str = "plus",
    runner: Runner | None = None,
    language: str | None = None,
) -> list[Problem]:
    """Load a dataset file as problems. ``tests`` picks EvalPlus's base or plus inputs;
    ``runner`` (a sandbox) is needed to decode LiveCodeBench's private tests; ``language``
    checks (HumanEval-X) or chooses (MultiPL-E) the language of multilingual datasets."""
    if tests not in ("base", "plus"):
        raise ValidationError("tests", "must be 'base' or 'plus'")
    fmt = canonical(fmt)
    if fmt == "kattis":
        return kattis.load(path)
    records = read_records(path)
    try:
        return _load(records, fmt, tests, runner, language)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        # A record without the fields the format reads: most often another format's file.
        what = f"the field {exc}" if isinstance(exc, KeyError) else f"a field ({exc})"
        raise ValidationError(
            "dataset", f"{path}: a record lacks {what} the {fmt} format reads; is it a {fmt} file?"
        ) from None


def _load(
    records: list[dict[str, Any]],
    fmt: str,
    tests: str,
    runner: Runner | None,
    language: str | None,
) -> list[Problem]:
    if fmt == "assay":
        return assay_suite.load(records)
    if fmt == "humaneval":
        return humaneval.load(records)
    if fmt == "codecontests":
        return codecontests.load(records)
    if fmt == "prime":
        return prime.load(records)
    if fmt == "livecodebench":
        return livecodebench.load(records, runner)
    if fmt == "kodcode":
        return kodcode.load(records)
    if fmt == "acecoder":
        return acecoder.load(records)
    if fmt in ("apps", "taco"):
        return apps.load(records)
    if fmt == "humaneval-x":
        return humanevalx.load(records, language)
    if fmt == "multipl-e":
        return multiple.load(records, language)
    if fmt == "mbpp":
        return mbpp.load(records)
    if fmt in ("humanevalplus", "mbppplus"):
        return evalplus.load(records, tests)
    raise ValidationError("format", f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


__all__ = ["FORMATS", "GIVEN_LIMITS", "canonical", "load"]
