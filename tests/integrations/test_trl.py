"""TRL reward functions, judged for real in the sandbox."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay import LocalExecutor, ValidationError
from assay.integrations import _judging
from assay.integrations.trl import (
    make_reward_func,
    make_reward_func_async,
    reward_func,
    reward_func_async,
)

from .helpers import fenced

DOUBLE = "print(2 * int(input()))"
INFO = json.dumps(
    {"test_cases": [{"type": "stdin_stdout", "input": "3\n", "output": "6\n"}]},
)


def test_string_completions_and_rows_without_tests(executor: LocalExecutor) -> None:
    f = make_reward_func(executor=executor)
    assert f.__name__ == "assay_binary"
    rewards = f(
        prompts=["p"] * 4,
        completions=[fenced(DOUBLE), fenced("print(0)"), fenced(DOUBLE), fenced(DOUBLE)],
        verification_info=[INFO, INFO, None, '{"what": 1}'],
        completion_ids=[[1, 2], [3], [4], [5]],  # TRL's own keywords are not columns
    )
    assert rewards == [1.0, 0.0, None, None]


def test_conversational_completions(executor: LocalExecutor) -> None:
    f = make_reward_func(column="input_output", executor=executor, reward="fraction")
    assert f.__name__ == "assay_fraction"
    io = {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "5\n"]}
    chats = [
        [{"role": "assistant", "content": fenced(DOUBLE)}],
        [
            {"role": "user", "content": "try again"},
            {"role": "assistant", "content": [{"type": "text", "text": fenced("print(5)")}]},
        ],
    ]
    assert f(prompts=[[], []], completions=chats, input_output=[io, io]) == [0.5, 0.5]


def test_other_columns_reach_the_parser(executor: LocalExecutor) -> None:
    f = make_reward_func(column="public_test_cases", executor=executor, name="lcb")
    assert f.__name__ == "lcb"
    tests = json.dumps([{"input": "[1, 2]", "output": "3", "testtype": "functional"}])
    code = "class Solution:\n    def total(self, xs):\n        return sum(xs)"
    rewards = f(
        prompts=["p"],
        completions=[fenced(code)],
        public_test_cases=[tests],
        metadata=[json.dumps({"func_name": "total"})],
        trainer_state=None,  # TRL also passes non-column keywords
    )
    assert rewards == [1.0]


def test_sandbox_errors_give_none(broken_executor: LocalExecutor) -> None:
    f = make_reward_func(executor=broken_executor)
    assert f(prompts=["p"], completions=[fenced(DOUBLE)], verification_info=[INFO]) == [None]


def test_default_reward_func_finds_the_column(
    executor: LocalExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_judging, "_executor", [executor])  # the shared executor, already warm
    gt = {"inputs": ["4\n"], "outputs": ["8\n"]}
    assert reward_func(["p"], [fenced(DOUBLE)], ground_truth=[gt]) == [1.0]
    assert asyncio.run(reward_func_async(["p"], [fenced("print(1)")], test_cases=[gt])) == [0.0]
    with pytest.raises(ValidationError) as err:
        reward_func(["p"], ["x"], answer=["42"])
    assert err.value.field == "column"


def test_async_factory(executor: LocalExecutor) -> None:
    f = make_reward_func_async(executor=executor)
    assert f.__name__ == "assay_binary"
    got: list[float | None] = asyncio.run(
        f(prompts=["p", "p"], completions=[fenced(DOUBLE), "oops"], verification_info=[INFO] * 2)
    )
    assert got == [1.0, 0.0]


def test_misconfiguration_fails_at_construction() -> None:
    with pytest.raises(ValidationError):
        make_reward_func(reward="nonsense")
    with pytest.raises(ValidationError):
        make_reward_func(language="cobol")
    with pytest.raises(ValidationError):
        make_reward_func(url="http://judge", reward="quality")
    f = make_reward_func(column="tests")
    with pytest.raises(ValidationError, match="tests"):
        f(prompts=["p"], completions=["x"], verification_info=[INFO])


def test_the_verdict_mix_goes_to_trls_own_logs(executor: LocalExecutor) -> None:
    """TRL hands reward functions ``log_metric`` and ``log_extra`` (issue 29: ignored)."""
    metrics: dict[str, float] = {}
    extra: dict[str, list[object]] = {}
    f = make_reward_func(executor=executor)
    rewards = f(
        prompts=["p"] * 4,
        completions=[fenced(DOUBLE), fenced("print(0)"), "", fenced(DOUBLE)],
        verification_info=[INFO, INFO, INFO, None],
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    assert rewards == [1.0, 0.0, 0.0, None]
    assert metrics["assay_binary/accepted"] == 0.25
    assert metrics["assay_binary/wrong_answer"] == 0.25
    assert metrics["assay_binary/no_code"] == 0.25
    assert metrics["assay_binary/time_limit"] == 0.0  # every verdict, every step
    assert metrics["assay_binary/unusable"] == 0.25
    assert extra == {
        "assay_binary_verdict": ["accepted", "wrong_answer", "no_code", "invalid_input"]
    }
