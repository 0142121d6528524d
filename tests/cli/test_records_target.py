"""A records target that cannot work is one line and exit 2 before any work (issue 29: an
unknown scheme or missing S3 credentials gave 69- to 284-line tracebacks, and ``assay
serve`` found out only at its first upload)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'assay[s3]')")

pytestmark = pytest.mark.slow  # a fresh interpreter per case


def _assay(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    # No credentials anywhere botocore looks: no variables, no ~/.aws, no instance role.
    env.update(HOME=str(home), AWS_EC2_METADATA_DISABLED="true", COLUMNS="80")
    return subprocess.run(
        [sys.executable, "-c", "from assay.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("records", "stats", "{url}"),
        ("serve", "--port", "0", "--records", "{url}"),
        (
            "eval",
            "{data}",
            "-f",
            "humaneval",
            "--samples",
            "{data}",
            "--out",
            "{data}.o",
            "--records",
            "{url}",
        ),
    ],
    ids=["records", "serve", "eval"],
)
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("foo://bucket/x", "unknown URL scheme foo://"),
        ("s3://assay-test-bucket/records", "no S3 credentials found for s3://assay-test-bucket"),
    ],
    ids=["scheme", "s3-credentials"],
)
def test_bad_records_target_is_one_line_and_exit_2(
    args: tuple[str, ...], url: str, says: str, tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("")
    done = _assay(*(a.format(url=url, data=data) for a in args), home=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert says in done.stderr
