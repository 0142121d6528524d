"""``assay eval --ray ADDRESS``: a separate driver process joins the test cluster and judges
there, with the same verdicts as on this machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# The cluster starts (and nodes come back) inside a test's setup: minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(600)]

CORPORA = Path(__file__).resolve().parents[4] / "shared" / "corpora"
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"


@pytest.mark.skipif(not HUMANEVAL.exists(), reason="HumanEval corpus not found")
def test_eval_on_the_cluster(cluster: Any, tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    rows = [
        {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"},
        {"task_id": "HumanEval/2", "completion": "    return 0.0\n"},
        {"task_id": "HumanEval/2", "solution": "import sys\nsys.exit(0)\n"},
    ]
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    assay = Path(sys.executable).with_name("assay")
    args = [str(HUMANEVAL), "--format", "humaneval", "--samples", str(samples)]
    verdicts = {}
    for where in ("local", "ray"):
        out = tmp_path / f"{where}.jsonl"
        extra = ["--ray", cluster.cluster.address] if where == "ray" else []
        proc = subprocess.run(
            [str(assay), "eval", *args, "--out", str(out), "--records", "off", *extra],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = [json.loads(line) for line in out.read_text().splitlines()]
        verdicts[where] = [r["verdict"] for r in sorted(got, key=lambda r: r["sample_index"])]
    assert verdicts["ray"] == verdicts["local"] == ["accepted", "wrong_answer", "runtime_error"]
