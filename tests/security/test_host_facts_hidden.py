"""Claim: a run sees nothing of the host's identity or layout.

Attack (red-team finding 7): a Python run's ``/proc/self/cmdline`` showed the checkout's path
(every Python program is a fork of the fork server), its memory map the state directory's
library path, ``/proc/self/cgroup`` the host's cgroup paths and the supervisor's host PID
(in the session name), and ``/proc/cmdline``, ``/proc/config.gz`` and the boot id were
readable. Now the fork server starts from a memfd bundle, the C library is mapped from a
memfd, each run has its own cgroup namespace, and those ``/proc`` files are empty.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

import assay
from assay import defaults

PROBE = r"""
import json, os, sys
def read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode(errors="replace")
    except OSError as exc:
        return f"<{exc.strerror}>"
out = {
    "cmdline": read("/proc/self/cmdline"),
    "maps": read("/proc/self/maps"),
    "cgroup": read("/proc/self/cgroup"),
    "environ": read("/proc/self/environ"),
    "files": sorted(str(getattr(m, "__file__", "")) for m in list(sys.modules.values())),
    "path": sys.path,
}
for name in ("cmdline", "config.gz", "kallsyms", "modules", "keys", "timer_list",
             "sched_debug", "sys/kernel/random/boot_id"):
    out["proc/" + name] = read("/proc/" + name)
print(json.dumps(out))
"""

C_PROBE = r"""
#include <stdio.h>
int main(void) {
    const char *paths[] = {"/proc/self/cgroup", "/proc/self/maps", "/proc/cmdline", 0};
    for (int i = 0; paths[i]; i++) {
        FILE *f = fopen(paths[i], "r");
        char buf[4096];
        size_t n;
        printf("== %s\n", paths[i]);
        if (!f) continue;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
        fclose(f);
    }
    return 0;
}
"""


def _host_markers() -> list[str]:
    """Strings that name this host's layout: the checkout, the state directory, the
    supervisor's pid, the cgroup session, the boot id."""
    markers = [
        os.path.dirname(os.path.dirname(os.path.abspath(assay.__file__))),  # .../src
        str(defaults.state_dir()),
        f"s{os.getpid()}-",
        "/assay/s",  # a cgroup session directory
    ]
    with open("/proc/sys/kernel/random/boot_id") as fh:
        markers.append(fh.read().strip())
    with open("/proc/cmdline") as fh:
        markers.append(fh.read().strip())
    return [m for m in markers if m]


def test_python_run_sees_no_host_path_pid_or_boot_identity(runner, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(PROBE)
    assert result.status == "ok", result.stderr[-2000:]
    text = result.stdout.decode()
    for marker in _host_markers():
        assert marker not in text, f"{marker!r} visible inside the sandbox"
    report = json.loads(text)
    for line in report["cgroup"].splitlines():
        assert line.rsplit(":", 1)[1] == "/", report["cgroup"]
    # gVisor's kernel has /proc files of its own (its command line, boot id): not the host's
    # (the markers above include the host's command line and boot id).
    for name in () if gvisor else ("cmdline", "kallsyms", "sys/kernel/random/boot_id"):
        assert report["proc/" + name] in ("", "<No such file or directory>"), name


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (Debian gcc)")
def test_executable_sees_no_host_cgroup_paths(runner, gvisor: bool) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(C_PROBE, "c")
    assert result.status == "ok", result.stderr[-2000:]
    text = result.stdout.decode()
    for marker in _host_markers():
        assert marker not in text, f"{marker!r} visible inside the sandbox"
    cgroup = text.split("== /proc/self/cgroup\n")[1].split("== ")[0]
    # gVisor shows no cgroup at all (no cgroupfs in the sandbox).
    assert (gvisor or cgroup) and all(line.endswith(":/") for line in cgroup.splitlines()), cgroup
