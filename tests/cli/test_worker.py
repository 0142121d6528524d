"""``assay worker``: a broker it cannot use is a usage error that names the host, never the
token; bad options are refused before anything starts."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from assay.cli import app

pytest.importorskip("redis", reason="redis-py is not installed (pip install 'assay[queue]')")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when this returns: nothing listens


def test_an_unreachable_broker_is_named_without_its_token() -> None:
    url = f"redis://:secret-token@127.0.0.1:{closed_port()}/0"
    result = CliRunner().invoke(app, ["worker"], env={"ASSAY_QUEUE_URL": url})
    assert result.exit_code == 2
    assert "127.0.0.1" in result.output
    assert "secret-token" not in result.output


def test_a_worker_needs_a_positive_visibility_timeout() -> None:
    result = CliRunner().invoke(
        app, ["worker", "--queue", "redis://127.0.0.1:1/0", "--visibility", "0"]
    )
    assert result.exit_code == 2
    assert "--visibility" in result.output
