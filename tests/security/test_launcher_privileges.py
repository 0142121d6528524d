"""Claim: however the program process is set up, the program has no privilege left.

Executables start from the C launcher (posix_spawned by the slot's init, which hands it the
three capabilities arming needs as inheritable and ambient ones); Python programs are armed
by launcher.c's library; and with ``SandboxConfig(launcher=False)`` both use the same steps
written in Python. In every case the program runs as uid/gid 65534 with every capability
set empty (ambient included), under no_new_privs and seccomp, and cannot get root back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from assay import Limits, Runner, SandboxConfig
from assay.sandbox import Sandbox
from assay.sandbox.config import is_sandbox_uid

C_PROBE = r"""
#define _GNU_SOURCE
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    printf("{");
    while (fgets(line, sizeof line, f)) {
        char key[64], value[128];
        if (sscanf(line, "%63[^:]:\t%127[^\n]", key, value) == 2 &&
            (!strncmp(key, "Cap", 3) || !strcmp(key, "NoNewPrivs") || !strcmp(key, "Seccomp") ||
             !strcmp(key, "Uid") || !strcmp(key, "Gid"))) {
            for (char *p = value; *p; p++)
                if (*p == '\t') *p = ' ';
            printf("\"%s\": \"%s\", ", key, value);
        }
    }
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0xff, sizeof d);
    printf("\"setuid\": %d, \"capset\": %d, \"ambient\": %d, \"unshare_ok\": %d}\n",
           setuid(0), (int)syscall(SYS_capset, &h, d),
           prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21, 0, 0), (int)(unshare(0x08000000) == 0));
    return 0;
}
"""

PY_PROBE = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
with open("/proc/self/status") as fh:
    out = {k: v for k, v in (l.split(":\t", 1) for l in fh.read().splitlines() if ":\t" in l)
           if k.startswith("Cap") or k in ("NoNewPrivs", "Seccomp", "Uid", "Gid")}
out["setuid"] = libc.setuid(0)
out["ambient"] = libc.prctl(47, 2, 21, 0, 0)
out["unshare_ok"] = int(libc.unshare(0x08000000) == 0)
out["input"] = open("data/in.txt").read() + input()
print(json.dumps(out))
"""


@pytest.fixture(scope="module", params=[True, False], ids=["launcher", "python-setup"])
def setup_runner(request: pytest.FixtureRequest) -> Iterator[Runner]:
    with Runner(Sandbox(SandboxConfig(launcher=request.param), pool_size=1)) as runner:
        yield runner


def _check(report: dict[str, object]) -> None:
    for key in ("Uid", "Gid"):
        ids = str(report[key]).split()
        assert len(set(ids)) == 1 and is_sandbox_uid(int(ids[0])), (key, report[key])
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(str(report[key]), 16) == 0, (key, report[key])
    assert report["NoNewPrivs"] == "1"
    assert report["Seccomp"] == "2"
    assert report["setuid"] == -1, "setuid(0) succeeded"
    assert report["ambient"] == -1, "raising an ambient capability succeeded"
    assert report["unshare_ok"] == 0, "unshare(CLONE_NEWNS) succeeded"


def test_executable_has_no_privileges(setup_runner: Runner) -> None:
    result = setup_runner.run(C_PROBE, "c", limits=Limits(time_s=5, memory_mb=256))
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    _check(report)
    assert report["capset"] == -1, "capset(all) succeeded"


def test_python_program_has_no_privileges(setup_runner: Runner) -> None:
    result = setup_runner.run(
        PY_PROBE, "python", b"!", Limits(time_s=5), files={"data/in.txt": b"hello"}
    )
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    _check(report)
    assert report["input"] == "hello!"


def test_the_setup_in_use_is_the_one_asked_for(setup_runner: Runner) -> None:
    setup_runner.run("pass")
    info = setup_runner.sandbox.zygote_info
    want = setup_runner.sandbox.config.launcher
    assert bool(info.get("launcher")) is want and bool(info.get("native")) is want, str(info)
    # With the library, Python program processes are forked and armed in C (the probes
    # above ran that way); without it, by os.fork and the Python steps.
    assert bool(info.get("native_fork")) is want, str(info)
