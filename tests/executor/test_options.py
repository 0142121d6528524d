"""The executors' shared keyword options (``assay.executor._options``): defaults filled in,
a misspelt name refused as Python refuses one, the cluster executor before it joins Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import defaults
from assay.executor import Execution, InMemoryBackend, LocalExecutor
from assay.executor._options import DEFAULTS, ExecutorOptions, with_defaults
from assay.telemetry import MemoryWriter


def _never(job: object) -> Execution:
    raise AssertionError("no job is submitted here")


def test_left_out_options_take_their_defaults() -> None:
    assert with_defaults("X", {"retries": 0}) == {**DEFAULTS, "retries": 0}
    assert set(DEFAULTS) == set(ExecutorOptions.__optional_keys__)


def test_unknown_option_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"^X\(\) got an unexpected keyword argument 'retry'$"):
        with_defaults("X", {"retry": 1})  # type: ignore[typeddict-unknown-key]


def test_local_executor_applies_given_and_default_options(tmp_path: Path) -> None:
    backend = InMemoryBackend(_never)
    with LocalExecutor(
        backend=backend,
        slots=1,
        max_queued=7,
        retries=0,
        cache=False,
        records=MemoryWriter(),
        state_dir=tmp_path,
        order="fifo",
    ) as ex:
        assert (ex.queue.capacity, ex.queue.order, ex.retries, ex.cache) == (7, "fifo", 0, None)
        assert ex.split is True
    with LocalExecutor(backend=backend, slots=1, records=MemoryWriter(), state_dir=tmp_path) as ex:
        assert ex.queue.capacity == defaults.EXECUTOR_MAX_QUEUED
        assert ex.retries == defaults.EXECUTOR_RETRIES and ex.cache is not None


def test_misspelt_option_fails_before_anything_starts() -> None:
    with pytest.raises(TypeError, match=r"LocalExecutor.*'max_queud'"):
        LocalExecutor(backend=InMemoryBackend(_never), max_queud=3)  # type: ignore[call-arg]


def test_ray_executor_refuses_a_misspelt_option_before_joining_ray() -> None:
    ray_executor = pytest.importorskip("assay.executor.ray").RayExecutor
    with pytest.raises(TypeError, match=r"RayExecutor.*'cache_entry'"):
        ray_executor("ray://nowhere.invalid:10001", cache_entry=5)
