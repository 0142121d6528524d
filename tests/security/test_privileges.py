"""Claim: a sandboxed program runs as an unprivileged uid/gid (its slot's own) with no capability at all, under
no_new_privs and a seccomp filter, and nothing it can do gives it root: setuid/setgid/
setgroups/capset calls fail, and executing a setuid-root binary (su, passwd, mount...)
does not raise its privileges.

The setuid check is direct: a small shared library, compiled inside the sandbox and
injected with LD_PRELOAD, reports the credentials the setuid binary actually runs with
(before its main). If exec had granted root, the dynamic loader would be in secure mode,
would ignore the library, and the report would be missing: that counts as a failure too.
"""

from __future__ import annotations

import json

from assay import Limits
from assay.sandbox.config import is_sandbox_uid

PRELOAD_SOURCE = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>

__attribute__((constructor)) static void report(void) {
    uid_t r, e, s; gid_t gr, ge, gs;
    getresuid(&r, &e, &s);
    getresgid(&gr, &ge, &gs);
    char caps[64] = "?", line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7)) sscanf(line + 7, "%63s", caps);
    printf("PROBE %u %u %u %u %u %u %lu %s\n", r, e, s, gr, ge, gs, getauxval(AT_SECURE), caps);
    fflush(stdout);
    _exit(0);
}
"""

PROGRAM = r"""
import ctypes, json, os, stat, subprocess, sys

libc = ctypes.CDLL(None, use_errno=True)
out = {"ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups()]}
with open("/proc/self/status") as fh:
    out["status"] = dict(
        line.split(":\t", 1) for line in fh.read().splitlines() if ":\t" in line
    )
out["no_new_privs"] = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS

calls = {}
def call(name, fn):
    ctypes.set_errno(0)
    res = fn()
    calls[name] = ["failed", ctypes.get_errno()] if res != 0 else ["succeeded", res]

call("setuid_0", lambda: libc.setuid(0))
call("seteuid_0", lambda: libc.seteuid(0))
call("setresuid_0", lambda: libc.setresuid(0, 0, 0))
call("setgid_0", lambda: libc.setgid(0))
call("setresgid_0", lambda: libc.setresgid(0, 0, 0))
groups = (ctypes.c_uint * 1)(0)
call("setgroups_0", lambda: libc.setgroups(1, groups))
# setfsuid returns the previous fsuid, never an error: read it back to see if it moved.
call("setfsuid_0", lambda: (libc.setfsuid(0), 0 if libc.setfsuid(-1) == 0 else -1)[1])

class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]
hdr = CapHeader(0x20080522, 0)
data = (CapData * 2)(CapData(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
                     CapData(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF))
call("capset_all", lambda: libc.capset(ctypes.byref(hdr), data))
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN = 47, 2, 21
call("ambient_raise", lambda: libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0))
call("clear_no_new_privs", lambda: 0 if libc.prctl(38, 0, 0, 0, 0) == 0
     and libc.prctl(39, 0, 0, 0, 0) == 0 else -1)  # PR_SET/GET_NO_NEW_PRIVS
call("seccomp_off", lambda: libc.prctl(22, 0, 0, 0, 0))  # PR_SET_SECCOMP, mode 0
out["calls"] = calls
out["ids_after"] = [os.getuid(), os.geteuid(), os.getgid(), os.getegid()]

cc = subprocess.run(["/usr/bin/gcc", "-shared", "-fPIC", "-O1", "-o", "/tmp/probe.so",
                     "probe.c"], capture_output=True)
out["cc"] = [cc.returncode, cc.stderr.decode(errors="replace")[-500:]]
setuid = {}
for path in ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount", "/usr/bin/newgrp",
             "/usr/bin/chsh", "/usr/bin/gpasswd", "/usr/bin/umount"):
    try:
        st = os.stat(path)
    except OSError:
        continue
    if not (st.st_mode & stat.S_ISUID and st.st_uid == 0):
        continue
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": "/tmp/probe.so"}
    p = subprocess.run([path, "--help"], capture_output=True, env=env, stdin=subprocess.DEVNULL,
                       timeout=10)
    setuid[path] = [p.returncode, p.stdout.decode(errors="replace")[-300:],
                    p.stderr.decode(errors="replace")[-300:]]
out["setuid"] = setuid
print(json.dumps(out))
"""


def test_program_has_no_privileges_and_cannot_gain_any(runner) -> None:
    limits = Limits(time_s=10, memory_mb=512)
    result = runner.run(PROGRAM, "python", b"", limits, files={"probe.c": PRELOAD_SOURCE})
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)

    me = report["ids"][0]  # the slot's own unprivileged id (uid == gid)
    assert is_sandbox_uid(me) and me != 0
    assert report["ids"][:4] == [me] * 4, report["ids"]
    assert report["ids"][4] in ([], [me]), f"supplementary groups: {report['ids'][4]}"
    status = report["status"]
    for key in ("Uid", "Gid"):
        assert status[key].split() == [str(me)] * 4, (key, status[key])
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        # gVisor's /proc/self/status has no CapAmb line (it has no ambient capabilities).
        assert int(status.get(key, "0"), 16) == 0, (key, status.get(key))
    assert report["no_new_privs"] == 1
    assert status.get("NoNewPrivs", "1") == "1"  # (gVisor's status has no such line)
    assert status["Seccomp"] == "2"

    for name, outcome in report["calls"].items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
    assert report["ids_after"] == [me] * 4

    assert report["cc"][0] == 0, f"could not build the probe library: {report['cc']}"
    assert report["setuid"], "no setuid-root binary visible in the sandbox: nothing was tested"
    for path, (code, stdout, stderr) in report["setuid"].items():
        probe = [line for line in stdout.splitlines() if line.startswith("PROBE ")]
        assert probe, (
            f"{path} ran in secure mode (it ignored LD_PRELOAD): exec may have raised privileges",
            code,
            stdout,
            stderr,
        )
        fields = probe[0].split()[1:]
        assert fields[:6] == [str(me)] * 6, f"{path} ran with ids {fields[:6]}"
        assert fields[6] == "0", f"{path} ran with AT_SECURE={fields[6]}"
        assert int(fields[7], 16) == 0, f"{path} ran with capabilities {fields[7]}"
