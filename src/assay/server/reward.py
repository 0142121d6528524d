"""OpenRLHF's remote reward model protocol: ``POST /get_reward``.

OpenRLHF sends ``{query, prompts, labels}`` (``--remote_rm_url``) and reads ``rewards``
(``scores`` and ``extra_logs`` too in recent versions). Each label carries the tests of its
sample, APPS-style: ``{"inputs", "outputs"}`` for stdio, plus ``fn_name`` for call tests, as
an object or a JSON string. The program is the last fenced block of the response (the query
after its prompt), else the response itself.

Assay's optional fields: ``limits`` (``{"time_s", "memory_mb", ...}`` for every entry;
default 4 s CPU and 1 GiB, APPS's) and ``stop_on_failure`` (default true: the reward is
binary, so a sample's judging ends at its first failed test and one looping sample costs one
time limit, not one per test).

A reward is ``null`` when the run is not a usable training signal (``sandbox_error``, a
deadline): DESIGN.md principle 5 forbids turning our faults into a 0. ``extra_logs.usable``
says which entries are; the trainer masks the others.
"""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Request

from ..errors import ValidationError
from ..formats import apps
from ..judge import Submission
from . import _convert
from ._service import Svc, caller
from .models import RewardRequest, RewardResponse
from .sandboxfusion import log_unknown

router = APIRouter(tags=["openrlhf"])


def _response(query: str, prompt: str | None) -> str:
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    return query


@router.post("/get_reward", response_model=RewardResponse)
async def get_reward(body: RewardRequest, request: Request, svc: Svc) -> RewardResponse:
    """Judge every (query, label) pair with the binary reward (1.0 when every test passes)."""
    log_unknown(body, "/get_reward")
    s = svc.settings
    n = len(body.query)
    if n == 0:
        raise ValidationError("query", "is empty")
    if n > s.max_batch:
        raise ValidationError("query", f"more than {s.max_batch} entries")
    if body.labels is None or len(body.labels) != n:
        raise ValidationError("labels", f"needs one label per query ({n})")
    if body.prompts is not None and len(body.prompts) != n:
        raise ValidationError("prompts", f"needs one prompt per query ({n}) or none")
    base = replace(apps.LIMITS, output_bytes=min(apps.LIMITS.output_bytes, s.max_output_bytes))
    limits = _convert.limits(body.limits, s, base, "limits") if body.limits else apps.LIMITS
    jobs: list[Submission] = []
    for i, (query, label) in enumerate(zip(body.query, body.labels, strict=True)):
        _convert.code(query, s, f"query[{i}]")
        prompt = body.prompts[i] if body.prompts is not None else None
        problem = _convert.label_problem(label, f"labels[{i}]", limits)
        src, _ = _convert.extract_code(_response(query, prompt), "python")
        jobs.append(Submission(problem, src, "python"))
    handle = await svc.submit(jobs, caller=caller(request), stop_on_failure=body.stop_on_failure)
    results = await svc.results(handle)
    rewards = [r.reward for r in results]
    return RewardResponse(
        rewards=rewards,
        scores=rewards,
        extra_logs={
            "verdict": [r.verdict or r.outcome for r in results],
            "passed": [r.judgement.passed if r.judgement else 0 for r in results],
            "total": [r.judgement.total if r.judgement else 0 for r in results],
            "usable": [r.reward is not None for r in results],
        },
    )
