"""One real ``assay serve`` (a subprocess on 127.0.0.1) for the client's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay_serve import assay_serve


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    with assay_serve("--slots", "2", "--records", "off") as url:
        yield url
