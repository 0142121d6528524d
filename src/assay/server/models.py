"""Request and response bodies. SandboxFusion's are field for field theirs; the rest native.

Limits and sizes are checked in :mod:`._convert` against :class:`Settings` (so the caps are
configurable), not here; pydantic only checks shapes and types.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..telemetry import RecordTest
from ..types import OutputEncoding

# -- SandboxFusion ---------------------------------------------------------------------------


#: SandboxFusion's request shapes accept fields they do not know (as SandboxFusion does, so
#: clients of newer versions keep working); the routes log them (``unknown_fields``). The
#: native models below forbid them: a misspelt field there is a 422 naming it.
_LENIENT = ConfigDict(extra="allow")


class _Environment(BaseModel):
    """Assay's extension fields of a run request: where the program runs."""

    image: str | None = Field(
        None,
        description="Assay extension: the task image to run on (id, id prefix or name from "
        "`assay image list`); unknown images are refused with 422",
    )
    isolation: str | None = Field(
        None,
        description='Assay extension: "default" or "gvisor" (the hardened tier); '
        "default: the service's setting",
    )


class RunCodeRequest(_Environment):
    model_config = _LENIENT
    compile_timeout: float = Field(10, description="seconds for the build (compiled languages)")
    run_timeout: float = Field(10, description="seconds the program may run (CPU and wall)")
    memory_limit_MB: int = Field(-1, description="MiB, swap included; -1: the server default")
    code: str = Field(..., examples=['print("hello")'])
    stdin: str | None = Field(None, examples=[""])
    language: str = Field(..., examples=["python"], description="SandboxFusion language name")
    files: dict[str, str | None] = Field({}, description="path -> base64 content (work dir)")
    fetch_files: list[str] = Field([], description="work-dir paths to return after the run")


class RunStatus(StrEnum):
    Success = "Success"
    Failed = "Failed"
    SandboxError = "SandboxError"


class CommandRunStatus(StrEnum):
    Finished = "Finished"
    Error = "Error"
    TimeLimitExceeded = "TimeLimitExceeded"


class CommandRunResult(BaseModel):
    status: CommandRunStatus
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: RunStatus
    message: str
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = {}


class TestConfig(BaseModel):
    __test__ = False
    model_config = _LENIENT
    dataset_type: str | None = None
    language: str | None = None
    locale: str | None = None
    is_fewshot: bool | None = None
    compile_timeout: float | None = None
    run_timeout: float | None = None
    custom_extract_logic: str | None = None
    provided_data: list[dict[str, Any]] | dict[str, Any] | None = None
    extra: dict[str, Any] = {}


class SubmitRequest(BaseModel):
    model_config = _LENIENT
    dataset: str
    id: int | str
    completion: str
    config: TestConfig


class EvalTestCase(BaseModel):
    passed: bool
    exec_info: RunCodeResponse
    test_info: dict[str, Any] | None = None


class EvalResult(BaseModel):
    id: int | str
    accepted: bool
    extracted_code: str
    full_code: str | None = None
    test_code: str | None = None
    tests: list[EvalTestCase]
    extracted_type: Literal["fenced", "incomplete_fenced", "heuristic", "empty"] | None = None
    extra: dict[str, Any] | None = None


# -- native ----------------------------------------------------------------------------------


class LimitsModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    time_s: float | None = Field(None, description="CPU seconds (decides time_limit)")
    wall_s: float | None = Field(None, description="wall-clock backstop (default 3*time+1)")
    memory_mb: int | None = None
    processes: int | None = None
    output_bytes: int | None = None


class RunBody(_Environment):
    model_config = ConfigDict(extra="forbid")
    code: str
    language: str = "python"
    stdin: str = ""
    limits: LimitsModel | None = None
    files: dict[str, str] = Field({}, description="path -> base64 content (work dir)")
    fetch_files: list[str] = []
    output_encoding: OutputEncoding = Field(
        "utf-8", description="stdout/stderr in the answer: utf-8 (lossy) or base64 (exact bytes)"
    )


class ProcessOutput(BaseModel):
    """What a process did, as a run and a session step both report it."""

    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    output_encoding: OutputEncoding = "utf-8"
    stdout_truncated: bool
    stderr_truncated: bool
    cpu_s: float
    wall_s: float
    peak_memory_bytes: int


class RunResponse(ProcessOutput):
    status: str
    files: dict[str, str] = {}


class TestModel(BaseModel):
    """``stdio``: ``input`` -> ``expected``; ``call``: ``fn_name(*args)`` -> ``expected_value``;
    ``script``: the test program ``code`` (assert statements, or a ``check`` function called
    by ``options.call``) run beside the submission with the judge's guards."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")
    kind: Literal["stdio", "call", "script"] = "stdio"
    input: str = ""
    expected: str | None = None
    compare: str = "tokens"
    fn_name: str | None = None
    args: list[Any] = []
    expected_value: Any = None
    code: str = Field("", description="script tests: the test program")
    options: dict[str, Any] = Field(
        {},
        description="call tests: also (other accepted values), tuples_as_lists, atol, rtol; "
        "script tests: setup (code run first, e.g. the prompt), call (an expression run "
        "last, e.g. check(candidate)), requires (names the submission must define)",
    )
    name: str = ""


class ProblemModel(_Environment):
    model_config = ConfigDict(extra="forbid")
    id: str = "inline"
    tests: list[TestModel]
    limits: LimitsModel | None = None
    network: Literal["none", "loopback"] = Field(
        "none",
        description="'loopback': each run of the tests has its own network namespace with lo "
        "up (servers on 127.0.0.1 inside the run); 'none' (default): no network at all",
    )


class SubmissionModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str
    language: str = "python"
    problem: ProblemModel | None = Field(None, description="default: the request's problem")


Priority = Literal["high", "normal", "low"]


class JudgeRequest(BaseModel):
    """One submission (``code`` + ``problem``) or many (``submissions``, each with its own
    ``problem`` or sharing the request's)."""

    model_config = ConfigDict(extra="forbid")
    code: str | None = None
    language: str = "python"
    problem: ProblemModel | None = None
    submissions: list[SubmissionModel] | None = None
    stop_on_failure: bool = False
    priority: Priority = "normal"
    deadline_s: float | None = Field(None, gt=0, le=86400)


class JudgeResult(BaseModel):
    index: int
    outcome: str
    verdict: str | None
    reward: float | None
    reason: str
    passed: int
    total: int
    tests: list[RecordTest]  # as an execution record has them: one schema
    cache_hit: bool
    queue_wait_s: float
    run_s: float


class JudgeResponse(BaseModel):
    results: list[JudgeResult]


class BatchCreated(BaseModel):
    batch_id: str
    size: int


class BatchStatus(BaseModel):
    batch_id: str
    status: Literal["running", "done"]
    size: int
    finished: int
    counts: dict[str, int]
    results: list[JudgeResult]


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward model request, plus Assay's optional ``limits`` (for every
    entry; default: 4 s CPU, 1 GiB, as APPS) and ``stop_on_failure`` (default true: the
    binary reward needs the verdict only, so a sample stops at its first failed test)."""

    model_config = _LENIENT

    query: list[str]
    prompts: list[str] | None = None
    labels: list[Any] | None = None
    limits: LimitsModel | None = None
    stop_on_failure: bool = True


class RewardResponse(BaseModel):
    rewards: list[float | None]
    scores: list[float | None]
    extra_logs: dict[str, list[Any]]


def unknown_fields(model: BaseModel, prefix: str = "") -> list[str]:
    """The fields of a lenient request that no model field took, as dotted paths."""
    out = [f"{prefix}{name}" for name in (model.model_extra or {})]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel) and value.model_config.get("extra") == "allow":
            out += unknown_fields(value, f"{prefix}{name}.")
    return out


class ErrorResponse(BaseModel):
    field: str
    message: str
