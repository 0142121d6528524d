"""The sandbox tiers a test runs a table of programs on: ``default``, ``gvisor``, ``image``
(rooted at a bullseye image, Python 3.9) and ``gvisor-image``; a tier this host cannot give
is skipped with the reason."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import pytest

from assay import Runner
from assay.images import ImageSpec, ImageStore, build_image
from assay.sandbox import SandboxConfig
from assay.sandbox.gvisor import available


def _image_root() -> str | None:
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        return None
    spec = ImageSpec(name="test-py39", suite="bullseye", packages=("python3",))
    return build_image(spec, ImageStore()).id


@contextlib.contextmanager
def tier_runner(name: str) -> Iterator[tuple[Runner, str | None]]:
    """A runner of tier ``name`` and the image its runs are rooted at (None: the host's)."""
    config = SandboxConfig()
    if name.startswith("gvisor"):
        ok, why = available()
        if not ok:
            pytest.skip(f"gVisor tier: {why}")
        config = SandboxConfig(isolation="gvisor")
    image = None
    if name.endswith("image"):
        image = _image_root()
        if image is None:
            pytest.skip("image-rooted tier: needs root and mmdebstrap (make apt)")
    with Runner(config=config) as r:
        yield r, image
