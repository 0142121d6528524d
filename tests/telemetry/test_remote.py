"""Records to a real S3 API server (moto on loopback): outages, kills, credentials, DuckDB.

See ``tests/s3_helpers.py`` for why moto. Every request is signed and checked against the IAM
user the server holds, so a passing upload proves the ``AWS_*`` variables were used.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _telemetry import MakeRecord

from assay.telemetry import FsspecWriter, Metrics, compact, iter_records
from s3_helpers import S3Server, clear_s3fs_cache, s3_server

pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'assay[s3]')")


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture
def url(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh bucket URL, with the server's credentials in the environment (only there)."""
    if not s3.running:
        s3.start()
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    clear_s3fs_cache()
    yield f"s3://assay-{uuid.uuid4().hex[:12]}/records"
    clear_s3fs_cache()


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def job_ids(url: str) -> list[str]:
    return sorted(r["job_id"] for r in iter_records(url))


def test_records_reach_s3_and_open_everywhere_from_the_same_url(
    url: str, tmp_path: Path, make_record: MakeRecord
) -> None:
    records = [
        make_record(verdict="accepted" if i % 3 else "wrong_answer", caller=f"c{i % 2}")
        for i in range(30)
    ]
    writer = FsspecWriter(url, spool_dir=tmp_path / "spool", upload_interval_s=0.1)
    metrics = Metrics()
    metrics.bind_records(writer)
    for rec in records:
        writer.write(rec)
    # No flush: the background uploader alone brings them to the store.
    wait_for(lambda: writer.stats().uploaded == 30, "all 30 records are uploaded")
    assert writer.stats().spooled == 0 and writer.stats().upload_errors == 0
    text = metrics.render().decode()
    assert "assay_records_uploaded_total 30.0" in text and "assay_records_spooled 0.0" in text
    writer.close()
    assert job_ids(url) == sorted(r["job_id"] for r in records)

    # `assay records` in another process reads the same URL, credentials from its environment.
    shown = subprocess.run(
        [sys.executable, "-m", "assay.cli", "records", "show", url, "--json", "--limit", "100"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert sorted(json.loads(line)["job_id"] for line in shown.stdout.splitlines()) == job_ids(url)

    written = compact(url)
    assert written and all(p.endswith(".parquet") for p in written)
    import duckdb
    import fsspec

    con = duckdb.connect()
    con.register_filesystem(fsspec.filesystem("s3"))
    rows = con.sql(
        f"SELECT verdict, count(*) FROM read_parquet('{url}/parquet/*/*.parquet') "
        "GROUP BY verdict ORDER BY verdict"
    ).fetchall()
    assert rows == [("accepted", 20), ("wrong_answer", 10)]


def test_endpoint_down_records_spool_then_upload_once_when_it_returns(
    s3: S3Server, url: str, tmp_path: Path
) -> None:
    writer = FsspecWriter(
        url, spool_dir=tmp_path / "spool", upload_interval_s=0.1, max_backoff_s=0.5
    )
    for i in range(10):
        writer.write({"job_id": f"before-{i}"})
    wait_for(lambda: writer.stats().uploaded == 10, "the first 10 are uploaded")
    s3.stop()
    started = time.monotonic()
    for i in range(20):
        writer.write({"job_id": f"during-{i}"})
    assert time.monotonic() - started < 1.0  # writers never wait on the store
    wait_for(lambda: writer.stats().upload_errors >= 1, "uploads fail while the endpoint is down")
    assert writer.stats().spooled == 20 and writer.stats().uploaded == 10
    s3.start()
    wait_for(lambda: writer.stats().uploaded == 30, "the spooled 20 follow once it is back")
    assert writer.stats().spooled == 0
    writer.close()
    ids = [r["job_id"] for r in iter_records(url)]
    assert len(ids) == len(set(ids)) == 30


def test_wrong_credentials_are_refused_and_the_records_wait_for_good_ones(
    s3: S3Server, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "spool"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    clear_s3fs_cache()
    writer = FsspecWriter(url, spool_dir=spool, upload_interval_s=None)
    for i in range(5):
        writer.write({"job_id": f"r{i}"})
    with pytest.raises(PermissionError):  # s3fs's translation of 403 (signature mismatch)
        writer.close()
    assert writer.stats().spooled == 5 and writer.stats().upload_errors >= 1
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret)
    clear_s3fs_cache()
    FsspecWriter(url, spool_dir=spool, upload_interval_s=None).close()
    assert job_ids(url) == [f"r{i}" for i in range(5)]


# A writer process that dies by SIGKILL at a chosen point of an upload.
CHILD = r"""
import os, signal, sys
from assay.telemetry import FsspecWriter
from assay.telemetry._store import Store

url, spool, when = sys.argv[1:4]
original = Store.put_file

def put_then_die(self, local, path):
    if when == "before":  # the object never completes
        os.kill(os.getpid(), signal.SIGKILL)
    original(self, local, path)
    os.kill(os.getpid(), signal.SIGKILL)  # the object exists; the spool copy is not removed

Store.put_file = put_then_die
writer = FsspecWriter(url, spool_dir=spool, upload_interval_s=None)
for i in range(50):
    writer.write({"job_id": f"job-{i}", "seq": i})
writer.flush()
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_writer_killed_mid_upload_loses_nothing_and_duplicates_nothing(
    url: str, tmp_path: Path, when: str
) -> None:
    spool = tmp_path / "spool"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, url, str(spool), when], env=os.environ, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL
    assert len(list(spool.glob("records-*.jsonl"))) == 1
    assert job_ids(url) == ([] if when == "before" else sorted(f"job-{i}" for i in range(50)))
    FsspecWriter(url, spool_dir=spool, upload_interval_s=None).close()  # the next run
    assert list(spool.glob("records-*.jsonl")) == []
    seqs = sorted(r["seq"] for r in iter_records(url))
    assert seqs == list(range(50))  # each record exactly once
