"""One keyword-only RewardConfig for both trainer adapters, and its documented options."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from assay import BinaryReward, Limits, LocalExecutor
from assay.executor import Execution, InMemoryBackend, Job
from assay.integrations import RewardConfig
from assay.integrations.trl import make_reward_func, make_reward_func_async
from assay.integrations.verl import compute_score, compute_score_batch
from assay.judge import Judgement, Submission, TestResult

from .helpers import fenced

STDIO = {"inputs": ["1\n", "2\n"], "outputs": ["1\n", "2\n"]}


class Flags(InMemoryBackend):
    """Accepts everything and remembers the stop_on_failure and limits each job came with."""

    def __init__(self) -> None:
        super().__init__(self._accept)
        self.seen: list[tuple[bool, Limits]] = []

    def _accept(self, job: Job) -> Execution:
        assert isinstance(job, Submission)
        tests = [TestResult(i, "accepted") for i in range(len(job.problem.tests))]
        return Execution("accepted", 1.0, "", judgement=Judgement("accepted", tests, 1.0))

    def execute(self, job: Job, stop_on_failure: bool) -> Execution:
        assert isinstance(job, Submission)
        self.seen.append((stop_on_failure, job.problem.limits))
        return super().execute(job, stop_on_failure)


@pytest.fixture
def flags() -> Flags:
    return Flags()


def _executor(backend: Flags) -> LocalExecutor:
    return LocalExecutor(backend=backend, slots=1, cache=False, split=False)


def test_the_config_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        RewardConfig("http://judge")  # type: ignore[misc]
    with pytest.raises(TypeError):
        make_reward_func("verification_info", "python")  # type: ignore[misc]
    assert all(f.kw_only for f in dataclasses.fields(RewardConfig))


def test_stop_on_failure_is_on_for_the_binary_reward_only(flags: Flags) -> None:
    with _executor(flags) as ex:
        compute_score("a", fenced("print(1)"), STDIO, executor=ex)
        compute_score("a", fenced("print(2)"), STDIO, executor=ex, reward="fraction")
        compute_score("a", fenced("print(3)"), STDIO, executor=ex, stop_on_failure=False)
        f = make_reward_func(column="tests", executor=ex, stop_on_failure=True, reward="fraction")
        f(prompts=["p"], completions=[fenced("print(4)")], tests=[STDIO])
        compute_score("a", fenced("print(6)"), STDIO, executor=ex, reward=BinaryReward())
    assert [stop for stop, _ in flags.seen] == [True, False, False, True, True]


def test_limits_replace_the_datasets_for_every_row(flags: Flags) -> None:
    tight = Limits(time_s=0.5, memory_mb=256)
    with _executor(flags) as ex:
        compute_score_batch(
            ["a"] * 2, [fenced("print(1)")] * 2, [STDIO] * 2, executor=ex, limits=tight
        )
    assert [limits for _, limits in flags.seen] == [tight, tight]


def test_one_config_object_serves_both_adapters(flags: Flags) -> None:
    with _executor(flags) as ex:
        config = RewardConfig(executor=ex, reward="fraction", limits=Limits(time_s=1))
        row = compute_score("a", fenced("print(1)"), STDIO, config=config)
        f = make_reward_func_async(column="tests", config=config)
        got = asyncio.run(f(prompts=["p"], completions=[fenced("print(5)")], tests=[STDIO]))
    assert row["score"] == 1.0 and got == [1.0]
    assert [stop for stop, _ in flags.seen] == [False, False]  # fraction needs every test


def test_bad_options_fail_when_the_function_is_made() -> None:
    with pytest.raises(ValueError, match="deadline_s"):
        make_reward_func(deadline_s=0)
    with pytest.raises(ValueError, match="limits"):
        make_reward_func(limits={"time_s": 1})
    with pytest.raises(ValueError, match="colum"):
        make_reward_func(colum="x")
