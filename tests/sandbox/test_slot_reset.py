"""A slot's reset between runs (slot.Slot._reset): each run gets a fresh tmpfs for /work,
/tmp and /dev/shm and a Landlock ruleset naming it, whether the slot's init does it in C
(launcher.c's ``assay_reset``) or in Python (``SandboxConfig(launcher=False)``, for hosts
without a C compiler): both must leave the same sandbox behind."""

from __future__ import annotations

import json

from assay import Runner, SandboxConfig
from assay.sandbox import Sandbox

PROBE = r"""
import json, os
out = {}
for p in ("/work", "/tmp", "/dev/shm"):
    st = os.stat(p)
    out[p] = [oct(st.st_mode), st.st_uid == os.getuid(), st.st_gid == os.getgid()]
mounts = {}
for line in open("/proc/self/mountinfo"):
    head, tail = line.split(" - ")
    f, t = head.split(), tail.split()
    if f[4] in ("/work", "/tmp", "/dev/shm"):
        mounts[f[4]] = [f[5], t[0], sorted(o for o in t[2].split(",") if not o.startswith(("uid=", "gid=")))]
out["mounts"] = mounts
out["left"] = sorted(os.listdir("/work")) + sorted(os.listdir("/tmp")) + sorted(os.listdir("/dev/shm"))
out["same tmpfs"] = len({os.stat(p).st_dev for p in ("/work", "/tmp", "/dev/shm")}) == 1
def attempt(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return "ok"
    except OSError as exc:
        return exc.errno
# /proc/self/comm is the process's own to write, unless a Landlock domain (no rule names
# /proc) refuses it.
out["writes"] = {p: attempt(p) for p in ("/work/a", "/tmp/a", "/dev/shm/a", "/etc/a", "/a", "/dev/null", "/proc/self/comm")}
print(json.dumps(out, sort_keys=True))
"""


def _probe(launcher: bool) -> tuple[list[dict[str, object]], dict[str, object]]:
    with Runner(Sandbox(SandboxConfig(launcher=launcher), pool_size=1)) as runner:
        reports = []
        for _ in range(3):  # the first tmpfs of a slot, then resets (the last one dropped)
            r = runner.run(PROBE)
            assert r.status == "ok", r.stderr
            reports.append(json.loads(r.stdout))
        return reports, runner.sandbox.zygote_info


def test_the_c_and_the_python_reset_leave_the_same_sandbox() -> None:
    native, info = _probe(launcher=True)
    python, python_info = _probe(launcher=False)
    assert info.get("native") and not python_info.get("native")
    assert native == python
    report = native[-1]
    assert report["writes"]["/work/a"] == report["writes"]["/tmp/a"] == "ok"
    assert report["writes"]["/dev/shm/a"] == report["writes"]["/dev/null"] == "ok"
    assert report["writes"]["/etc/a"] == report["writes"]["/a"] == 30  # EROFS
    if info.get("landlock_abi"):
        assert report["writes"]["/proc/self/comm"] == 13  # EACCES: Landlock
    assert report["left"] == ["main.py"]  # nothing of the earlier runs
    assert report["/work"] == ["0o40755", True, True]
    assert report["/tmp"] == report["/dev/shm"] == ["0o41777", False, False]
    assert report["same tmpfs"]
