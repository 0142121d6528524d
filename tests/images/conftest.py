"""Images the tests build themselves: a minimal Debian one (mmdebstrap, once per machine:
the store is content-addressed by spec, so later sessions find it). Archives are assembled
by ``_archives``; nothing is downloaded from a container registry."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from _archives import PY39_SPEC

from assay.images import Image, ImageSpec, ImageStore, build_image

SPECS = Path(__file__).parent / "specs"


def _needs_builder() -> None:
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        pytest.skip("building images needs root and mmdebstrap (make apt)")


@pytest.fixture(scope="session")
def py39_image() -> Image:
    """The bullseye (Python 3.9) image, built once per machine."""
    _needs_builder()
    return build_image(PY39_SPEC, ImageStore())  # $ASSAY_IMAGES_DIR: kept across sessions


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    return ImageStore(tmp_path / "images")


@pytest.fixture(scope="session")
def security_image() -> Image:
    """The security suite's image (bullseye, a C compiler, pip's attrs 23.2.0): built once
    per machine, shared with `make security-image`."""
    _needs_builder()
    return build_image(ImageSpec.load(str(SPECS / "security.toml")), ImageStore())
