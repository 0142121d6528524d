"""One real ``assay serve`` (a subprocess on 127.0.0.1) for the client's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from serve_helpers import served


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    with served("--slots", "2", "--records", "off") as (url, _pid):
        yield url
