"""A gVisor container's cleanup runs whole even when ``runsc delete`` cannot be spawned (CI
saw that spawn fail with EFAULT once, and the sandbox's process, bundle and cgroup were then
left behind)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

from assay.sandbox._gvcontainer import Container


def test_destroy_cleans_up_when_runsc_delete_cannot_run(tmp_path: Path) -> None:
    bundle = tmp_path / "assay-test"
    bundle.mkdir()
    (bundle / "config.json").write_text("{}")
    box = object.__new__(Container)
    box.owner = SimpleNamespace(runsc_argv=lambda: [str(tmp_path / "no-such-runsc")])
    box.id = "assay-test"
    box.bundle = str(bundle)
    box.cg = None
    box.proc = subprocess.Popen(
        ["sleep", "60"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        box.destroy()
        assert box.proc.poll() is not None  # the sandbox's process is killed and reaped
        assert not bundle.exists()
    finally:
        if box.proc.poll() is None:
            box.proc.kill()
            box.proc.wait()
