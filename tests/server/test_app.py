"""The app around the routes (issue 14): ``/docs`` works offline, unknown fields are
rejected on the native API and logged on SandboxFusion's lenient routes."""

from __future__ import annotations

import logging
import re

import httpx
import pytest


def test_docs_are_served_from_local_files(client: httpx.Client) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    urls = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
    assert urls, page.text
    for url in urls:
        assert url.startswith("/"), f"/docs loads {url} from elsewhere"
        asset = client.get(url)
        assert asset.status_code == 200 and asset.content, url
    assert "cdn" not in page.text.lower()
    assert client.get("/openapi.json").json()["info"]["title"] == "Assay"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/run", {"code": "print(1)", "run_timout": 2}, "run_timout"),
        (
            "/v1/judge",
            {"code": "1", "problem": {"tests": []}, "stop_on_faliure": True},
            "stop_on_faliure",
        ),
        ("/v1/batches", {"code": "1", "priorty": "high"}, "priorty"),
    ],
)
def test_native_routes_reject_unknown_fields(
    client: httpx.Client, path: str, body: dict[str, object], field: str
) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert field in r.json()["message"]


def test_sandboxfusion_routes_are_lenient_but_log_unknown_fields(
    client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="assay.server"):
        r = client.post(
            "/run_code", json={"code": "print(1)", "language": "python", "run_timout": 2}
        )
        assert r.status_code == 200 and r.json()["status"] == "Success", r.text
        body = {
            "dataset": "d",
            "id": 1,
            "completion": "print(1)",
            "config": {
                "language": "python",
                "provided_data": {"test": [{"input": {"stdin": ""}, "output": {"stdout": "1\n"}}]},
                "run_timout": 2,
            },
            "extra_thing": 1,
        }
        r = client.post("/submit", json=body)
        assert r.status_code == 200 and r.json()["accepted"] is True, r.text
    text = caplog.text
    assert "/run_code: ignored unknown field(s): run_timout" in text
    assert "/submit: ignored unknown field(s): extra_thing, config.run_timout" in text
