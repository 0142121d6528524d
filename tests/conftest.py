"""Shared fixtures: one sandbox pool per test session (it is thread-safe and reusable)."""

from __future__ import annotations

import os
import resource
import tempfile
from collections.abc import Iterator

import pytest

from assay import Limits, Runner
from assay.types import ExecResult

# Tests must not write records or runtime estimates into the user's home directory (both
# are read when an executor starts, so setting them here is early enough).
_STATE = tempfile.mkdtemp(prefix="assay-test-state-")
os.environ.setdefault("ASSAY_RECORDS", os.path.join(_STATE, "records"))
os.environ.setdefault("ASSAY_STATE_DIR", os.path.join(_STATE, "state"))
os.environ.setdefault("ASSAY_CACHE_DIR", os.path.join(_STATE, "compile-cache"))
# Task images the tests build (minutes with mmdebstrap) are kept across sessions: the store
# is content-addressed by spec, so a later session finds them already built.
os.environ.setdefault("ASSAY_IMAGES_DIR", "/var/tmp/assay-test-images")
# ASSAY_TEST_IMAGE=<spec file, id or name>: every sandbox of the session runs on that image,
# built first if a spec names it (the security suite's image mode: `make security-image`).
if os.environ.get("ASSAY_TEST_IMAGE"):
    from assay.images import ImageSpec, ImageStore, build_image

    _ref = os.environ["ASSAY_TEST_IMAGE"]
    _image = build_image(ImageSpec.load(_ref)) if _ref.endswith(".toml") else ImageStore().get(_ref)
    os.environ["ASSAY_IMAGE_ROOT"] = _image.path


@pytest.fixture(scope="session")
def runner() -> Iterator[Runner]:
    with Runner() as r:
        yield r


@pytest.fixture
def run_py(runner: Runner):  # type: ignore[no-untyped-def]
    """Run Python source with small default limits."""

    def _run(code: str, stdin: str = "", **limits: object) -> ExecResult:
        lim = Limits(**{"time_s": 2.0, "memory_mb": 256, **limits})  # type: ignore[arg-type]
        return runner.run(code, "python", stdin, lim)

    return _run


@pytest.fixture
def descriptors_past_1024() -> Iterator[None]:
    """This process holds over a thousand open descriptors for the test, as a busy server
    does: a new pipe or socket then gets a number ``select`` refuses (CI saw
    ``filedescriptor out of range in select()``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard descriptor limit ({hard}) is under 1200")
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        assert max(held) > 1024
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
