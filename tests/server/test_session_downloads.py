"""Session downloads stream with bounded memory and a cap (issue 26)."""

from __future__ import annotations

import base64
import io
import tarfile
from collections.abc import Iterator

import httpx
import pytest
from server_helpers import live

from assay.executor import LocalExecutor
from assay.server import Settings, create_app
from serve_helpers import served, status_kib

SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 64, "cpu_s": 60}
MiB = 1 << 20


@pytest.fixture(scope="module")
def capped(sandbox_executor: LocalExecutor) -> Iterator[httpx.Client]:
    """A service whose downloads are capped at 1 MiB."""
    settings = Settings(max_download_bytes=MiB)
    with live(create_app(sandbox_executor, settings=settings)) as srv, srv.client() as c:
        yield c


def _session(client: httpx.Client, files: dict[str, bytes], **limits: int) -> str:
    enc = {k: base64.b64encode(v).decode() for k, v in files.items()}
    limits = {**SMALL, **limits}
    r = client.post("/v1/sessions", json={"limits": limits, "files": enc})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def test_a_tar_of_a_directory_streams_whole(client: httpx.Client) -> None:
    sid = _session(client, {"d/a.txt": b"alpha", "d/sub/b.bin": bytes(range(256)) * 4096})
    try:
        r = client.get(f"/v1/sessions/{sid}/tar", params={"dir": "d"})
        assert r.status_code == 200, r.text
        with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
            files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
        assert files == {"a.txt": b"alpha", "sub/b.bin": bytes(range(256)) * 4096}
        gz = client.get(f"/v1/sessions/{sid}/tar", params={"dir": "d", "gzip": True})
        with tarfile.open(fileobj=io.BytesIO(gz.content), mode="r:gz") as tar:
            assert sorted(m.name for m in tar if m.isfile()) == ["a.txt", "sub/b.bin"]
        assert client.get(f"/v1/sessions/{sid}/tar", params={"dir": "d/a.txt"}).status_code == 400
    finally:
        client.delete(f"/v1/sessions/{sid}")


def test_a_download_over_the_cap_is_a_413_naming_path_and_cap(capped: httpx.Client) -> None:
    sid = _session(capped, {"big.bin": b"x" * (MiB + 1), "ok.bin": b"y" * MiB})
    try:
        r = capped.get(f"/v1/sessions/{sid}/files/big.bin")
        assert r.status_code == 413, r.text
        body = r.json()
        assert body["field"] == "path" and body["limit"] == MiB
        assert "big.bin" in body["message"] and str(MiB) in body["message"]
        assert capped.get(f"/v1/sessions/{sid}/files/ok.bin").content == b"y" * MiB
        tar = capped.get(f"/v1/sessions/{sid}/tar")
        assert tar.status_code == 413 and tar.json()["field"] == "dir", tar.text
        # The session is still usable after the refusals.
        step = capped.post(f"/v1/sessions/{sid}/exec", json={"command": "echo ok"}).json()
        assert step["stdout"] == "ok\n"
    finally:
        capped.delete(f"/v1/sessions/{sid}")


@pytest.mark.slow
def test_a_huge_sparse_file_download_keeps_the_service_small() -> None:
    # One 768 MiB sparse file grew assay serve by ~1.5 GiB when a reply carried it whole.
    with served("--slots", "1") as (url, pid), httpx.Client(base_url=url, timeout=300) as c:
        # Memory enough for the agent to hold the file whole, as it did before the fix (the
        # stream holds a chunk of it): what grew then was the service.
        sid = _session(c, {}, disk_mb=1024, memory_mb=2048)
        step = c.post(f"/v1/sessions/{sid}/exec", json={"command": "truncate -s 768M big"})
        assert step.json()["exit_code"] == 0, step.text
        before = status_kib(pid, "VmHWM")
        got = 0
        with c.stream("GET", f"/v1/sessions/{sid}/files/big") as r:
            assert r.status_code == 200
            for chunk in r.iter_bytes():
                got += len(chunk)
        grew_mib = (status_kib(pid, "VmHWM") - before) / 1024
        c.delete(f"/v1/sessions/{sid}")
    assert got == 768 * MiB
    assert grew_mib < 64, f"assay serve's peak RSS grew {grew_mib:.0f} MiB over one download"


@pytest.mark.slow
def test_downloads_on_the_gvisor_tier_stream_and_a_fork_there_is_a_501_not_a_500() -> None:
    import shutil

    if shutil.which("runsc") is None:
        pytest.skip("runsc (gVisor) is not installed: make install puts it in /usr/bin")
    with served("--slots", "1", "--isolation", "gvisor") as (url, _pid):
        with httpx.Client(base_url=url, timeout=120) as c:
            data = bytes(range(256)) * 8192  # 2 MiB: three chunks
            sid = _session(c, {"d/a.bin": data})
            assert c.get(f"/v1/sessions/{sid}/files/d/a.bin").content == data
            tar = c.get(f"/v1/sessions/{sid}/tar", params={"dir": "d"})
            with tarfile.open(fileobj=io.BytesIO(tar.content)) as t:
                assert t.extractfile("a.bin").read() == data  # type: ignore[union-attr]
            fork = c.post(f"/v1/sessions/{sid}/fork")
            assert fork.status_code == 501, fork.text  # our tier's limit, not the client's
            c.delete(f"/v1/sessions/{sid}")
