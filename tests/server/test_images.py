"""The service's ``image`` extension fields: unknown images are a 422 naming the field; a
known one runs there (its Python, not the host's)."""

from __future__ import annotations

import os
import shutil
import sys

import httpx
import pytest

from assay.images import Image, ImageSpec, ImageStore, build_image

#: The same spec as tests/images (content-addressed: built once per machine, shared).
PY39 = ImageSpec(name="test-py39", suite="bullseye", packages=("python3",))

RUN_CODE = {"code": "print(1)", "language": "python", "run_timeout": 5}
TEST = {"kind": "stdio", "input": "", "expected": "9\n"}


@pytest.mark.parametrize(
    ("path", "payload", "field"),
    [
        ("/run_code", {**RUN_CODE, "image": "no-such-image"}, "image"),
        ("/v1/run", {"code": "print(1)", "image": "no-such-image"}, "image"),
        (
            "/v1/judge",
            {
                "problem": {"tests": [TEST], "image": "0123456789ab"},
                "submissions": [{"code": "print(9)"}],
            },
            "problem.image",
        ),
        ("/v1/sessions", {"image": "no-such-image"}, "image"),
        ("/run_code", {**RUN_CODE, "isolation": "vm"}, "isolation"),
    ],
)
def test_unknown_image_is_a_4xx_naming_the_field(
    client: httpx.Client, path: str, payload: dict, field: str
) -> None:
    r = client.post(path, json=payload)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert ("no image" if field.endswith("image") else "not one of") in r.json()["message"]


@pytest.fixture(scope="module")
def py39() -> Image:
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        pytest.skip("building images needs root and mmdebstrap (make apt)")
    return build_image(PY39, ImageStore())


@pytest.mark.slow
def test_run_code_and_judge_in_an_image(client: httpx.Client, py39: Image) -> None:
    code = "import sys; print(sys.version_info[1])"
    r = client.post("/run_code", json={**RUN_CODE, "code": code, "image": "test-py39"})
    assert r.status_code == 200, r.text
    assert r.json()["run_result"]["stdout"] == "9\n"
    host = client.post("/run_code", json={**RUN_CODE, "code": code}).json()
    assert host["run_result"]["stdout"] == f"{sys.version_info[1]}\n"
    judged = client.post(
        "/v1/judge",
        json={
            "problem": {"tests": [TEST], "image": py39.id[:12]},
            "submissions": [{"code": code}],
        },
    )
    assert judged.status_code == 200, judged.text
    assert "accepted" in judged.text
