"""JSON logs: one object per line, ids of the event, nothing sensitive above DEBUG; the service
and the executor log batches and jobs that way."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from server_helpers import fake_run, live, memory_executor

from assay.server import create_app
from assay.telemetry.logs import JsonFormatter, configure_logging

SECRET_CODE = "print('do-not-log-me-123')"


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = configure_logging("debug", "json", stream)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def test_formatter_writes_context_and_drops_sensitive_fields_above_debug(
    captured: io.StringIO,
) -> None:
    log = logging.getLogger("assay.test")
    log.info("ran", extra={"job_id": "j1", "batch_id": "b1", "code": SECRET_CODE, "stdout": "x"})
    log.debug("ran", extra={"job_id": "j2", "code": SECRET_CODE})
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed", extra={"job_id": "j3"})
    info, debug, error = lines(captured)
    assert info["job_id"] == "j1" and info["batch_id"] == "b1" and info["level"] == "info"
    assert "code" not in info and "stdout" not in info
    assert debug["code"] == SECRET_CODE  # at DEBUG the operator asked for everything
    assert error["level"] == "error" and "RuntimeError: boom" in str(error["exc"])


def test_configure_logging_names_a_bad_level_or_format() -> None:
    with pytest.raises(ValueError, match="log level"):
        configure_logging("loud")
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml")  # type: ignore[arg-type]


def test_service_and_executor_log_batches_and_jobs_with_their_ids(
    captured: io.StringIO,
) -> None:
    ex = memory_executor(fake_run(), slots=2, cache=False)
    try:
        with live(create_app(ex)) as srv, httpx.Client(base_url=srv.url, timeout=30) as client:
            r = client.post(
                "/run_code",
                json={"code": SECRET_CODE, "language": "python"},
                headers={"x-assay-caller": "trainer-7"},
            )
            assert r.status_code == 200
    finally:
        ex.close()
    events = [e for e in lines(captured) if "event" in e]
    queued = next(e for e in events if e["event"] == "batch_queued")
    done = next(e for e in events if e["event"] == "batch_done")
    job = next(e for e in events if e["event"] == "job_done")
    assert queued["caller"] == "trainer-7" and queued["jobs"] == 1
    assert done["batch_id"] == queued["batch_id"] == job["batch_id"]
    assert done["verdicts"] == {"ok": 1} and job["level"] == "debug" and job["job_id"]
    above_debug = [
        line for line in captured.getvalue().splitlines() if '"level":"debug"' not in line
    ]
    assert not any("do-not-log-me" in line for line in above_debug)
    assert all(isinstance(json.loads(line), dict) for line in above_debug)


def test_json_formatter_is_one_line_per_record() -> None:
    record = logging.makeLogRecord({"msg": "a\nb", "levelno": 20, "levelname": "INFO"})
    assert "\n" not in JsonFormatter().format(record)
