"""Ground truth as trainers store it, turned into a :class:`~assay.judge.Problem`.

RL datasets keep a task's tests in one column, in one of a handful of dialects. Each dialect
already has a loader in :mod:`assay.formats`; this module only recognises which dialect a
value is written in and hands it to that loader, so a test means the same thing here as in
``assay eval``:

- APPS/TACO ``input_output`` (``{"inputs", "outputs", "fn_name"?}``), which is also veRL's
  prime/sandbox-fusion code ground truth: :mod:`assay.formats.apps`;
- PrimeIntellect/open-r1 ``verification_info`` (``{"language"?, "test_cases": [...]}``):
  :mod:`assay.formats.prime`;
- LiveCodeBench ``public_test_cases`` (a list of ``{"input", "output", "testtype"}``, the
  function name in ``metadata.func_name``): :mod:`assay.formats.livecodebench`;
- assert strings (AceCoder ``test_cases``, veRL's ``assert_case``): :mod:`assay.formats.acecoder`;
- an already built :class:`Problem`, returned as is.

Anything else raises :class:`ValidationError` naming the offending field, because a row
whose tests cannot be read must never be scored as if the program had failed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ValidationError
from ..formats import acecoder, apps, livecodebench, prime
from ..judge import Problem

__all__ = ["EXTRA_KEYS", "parse_ground_truth"]

_ID_KEYS = ("problem_id", "task_id", "question_id", "id", "index")
#: The only ``extra_info`` keys the parser reads (callers may key caches on them alone).
EXTRA_KEYS = ("metadata", "func_name", *_ID_KEYS)
_DIALECTS = (
    "input_output",
    "inputs/outputs",
    "verification_info",
    "test_cases",
    "public_test_cases",
    "assert_case",
)


def parse_ground_truth(
    ground_truth: Any,
    *,
    data_source: str | None = None,
    extra_info: Mapping[str, Any] | None = None,
) -> Problem:
    """The problem described by ``ground_truth`` (a JSON string, a dict, a list or a Problem).

    ``extra_info`` supplies what some dialects keep outside the tests: LiveCodeBench's
    ``metadata.func_name`` and an id (``problem_id``, ``task_id``, ``index``, ...) used to
    learn runtime estimates per problem. A language named by the ground truth (PRIME's
    ``verification_info.language``) is kept in ``problem.metadata["language"]``.
    """
    if isinstance(ground_truth, Problem):
        return ground_truth
    extra = dict(extra_info or {})
    value = _plain(_decode(ground_truth, "ground_truth"))
    pid = _problem_id(value, data_source, extra)
    build, rec, field = _dialect(value, extra, pid)
    try:
        problem = build(rec)
    except ValidationError as exc:
        raise ValidationError(f"{field}.{exc.field}", exc.message) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(field, f"malformed test ({type(exc).__name__}: {exc})") from None
    metadata = dict(problem.metadata)
    language = _language(value)
    if language:
        metadata["language"] = language
    # The loaders take the id from their own record fields; ours also names the data source.
    return dataclasses.replace(problem, id=pid, metadata=metadata)


Builder = Callable[[dict[str, Any]], Problem]


def _dialect(value: Any, extra: dict[str, Any], pid: str) -> tuple[Builder, dict[str, Any], str]:
    """Which loader reads ``value``, the record to hand it, and the field to blame."""
    if isinstance(value, dict):
        if "ground_truth" in value and len(value) <= 2:  # veRL's reward_model column
            return _dialect(_plain(_decode(value["ground_truth"], "ground_truth")), extra, pid)
        if "input_output" in value:
            return apps.problem, {**value, "id": pid}, "ground_truth.input_output"
        if "inputs" in value or "outputs" in value:
            return apps.problem, {"input_output": value, "id": pid}, "ground_truth"
        if "verification_info" in value:
            return prime.problem, {**value, "id": pid}, "ground_truth.verification_info"
        if "public_test_cases" in value:
            rec = {**value, "id": pid, "metadata": value.get("metadata") or _lcb_meta(extra, [])}
            return _lcb, rec, "ground_truth.public_test_cases"
        if "assert_case" in value:
            return (
                acecoder.problem,
                {"test_cases": value["assert_case"], "id": pid},
                ("ground_truth.assert_case"),
            )
        if "test_cases" in value:
            cases = value["test_cases"]
            if isinstance(cases, list) and cases and all(isinstance(c, str) for c in cases):
                return acecoder.problem, {"test_cases": cases, "id": pid}, "ground_truth.test_cases"
            return prime.problem, {"verification_info": value, "id": pid}, "ground_truth"
        keys = ", ".join(sorted(map(str, value))) or "none"
        raise ValidationError(
            "ground_truth", f"unrecognised dict (keys: {keys}); expected one of {_DIALECTS}"
        )
    if isinstance(value, list):
        if not value:
            raise ValidationError("ground_truth", "an empty list of tests")
        if all(isinstance(c, str) for c in value):
            return acecoder.problem, {"test_cases": value, "id": pid}, "ground_truth"
        if all(isinstance(c, dict) and "testtype" in c for c in value):
            rec = {"public_test_cases": value, "id": pid, "metadata": _lcb_meta(extra, value)}
            return _lcb, rec, "ground_truth"
        if all(isinstance(c, dict) and "type" in c for c in value):
            return (
                prime.problem,
                {"verification_info": {"test_cases": value}, "id": pid},
                ("ground_truth"),
            )
        raise ValidationError(
            "ground_truth",
            "a list that is neither assert strings, LiveCodeBench tests (testtype) "
            "nor PRIME test cases (type)",
        )
    raise ValidationError(
        "ground_truth", f"expected a JSON object, a list or a Problem, got {type(value).__name__}"
    )


def _lcb(rec: dict[str, Any]) -> Problem:
    # Public tests only: private ones are pickled, and decoding them needs a sandbox run
    # per row, which a reward function must not do behind the trainer's back.
    return livecodebench.problem(rec, None)


def _lcb_meta(extra: dict[str, Any], cases: list[Any]) -> dict[str, Any]:
    """LiveCodeBench's function name: from ``extra_info`` (``metadata.func_name`` or
    ``func_name``), else from a test's own ``metadata`` (DeepCoder keeps it there)."""
    meta = _plain(_decode(extra.get("metadata") or {}, "extra_info.metadata"))
    if isinstance(meta, dict) and meta.get("func_name"):
        return meta
    if extra.get("func_name"):
        return {"func_name": extra["func_name"]}
    for case in cases:
        m = case.get("metadata") if isinstance(case, dict) else None
        m = _plain(_decode(m, "ground_truth.metadata")) if m else None
        if isinstance(m, dict) and m.get("func_name"):
            return {"func_name": m["func_name"]}
    return {}


def _language(value: Any) -> str | None:
    info = value.get("verification_info", value) if isinstance(value, dict) else None
    info = _decode(info, "ground_truth.verification_info") if info is not None else None
    lang = info.get("language") if isinstance(info, dict) else None
    return lang if isinstance(lang, str) and lang else None


def _decode(value: Any, field: str) -> Any:
    """JSON text -> value (twice at most: some datasets store JSON inside a JSON string)."""
    for _ in range(2):
        if not isinstance(value, str | bytes):
            return value
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValidationError(field, f"not valid JSON ({exc})") from None
    return value


def _plain(value: Any) -> Any:
    """Builtin containers for array-likes: parquet readers hand nested lists over as numpy
    arrays, which the loaders (and the call tests' expected values) must not see."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, str | bytes | int | float | bool):
        return _plain(tolist())
    return value


def _problem_id(value: Any, data_source: str | None, extra: dict[str, Any]) -> str:
    """A stable id: the dataset's own when it has one, else a hash of the tests. Runtime
    estimates are learned per problem id, so equal tests must give equal ids."""
    own = next((extra[k] for k in _ID_KEYS if extra.get(k) not in (None, "")), None)
    if own is None and isinstance(value, dict):
        own = next((value[k] for k in _ID_KEYS if value.get(k) not in (None, "")), None)
    if own is None:
        body = json.dumps(value, sort_keys=True, default=repr).encode()
        own = "gt-" + hashlib.sha256(body).hexdigest()[:16]
    return f"{data_source}/{own}" if data_source else str(own)
