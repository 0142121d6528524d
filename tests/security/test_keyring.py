"""Claim: a sandboxed program cannot use the kernel keyring (keyctl, add_key,
request_key). Keyrings are shared across namespaces by uid, so they are a channel between
runs of the same uid, and they have a long history of kernel bugs.

The calls are well formed (a "user" key with a payload, the session/process/user keyrings),
so that only a policy refusal can make them fail. ``/proc/keys`` must not list a key created
here either (it is checked after the attempts).
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_ADD_KEY, NR_REQUEST_KEY, NR_KEYCTL = 248, 249, 250
KEY_SPEC_THREAD, KEY_SPEC_PROCESS, KEY_SPEC_SESSION, KEY_SPEC_USER = -1, -2, -3, -4
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_DESCRIBE = 0, 1, 6
KEYCTL_SEARCH, KEYCTL_READ = 10, 11
out = {}

def sc(name, *args):
    ctypes.set_errno(0)
    res = libc.syscall(*args)
    out[name] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded", res]

for ring_name, ring in (("thread", KEY_SPEC_THREAD), ("process", KEY_SPEC_PROCESS),
                        ("session", KEY_SPEC_SESSION), ("user", KEY_SPEC_USER)):
    sc(f"get_id_{ring_name}", NR_KEYCTL, KEYCTL_GET_KEYRING_ID, ring, 1)
    payload = b"assay-key-payload"
    sc(f"add_key_{ring_name}", NR_ADD_KEY, b"user", b"assay-test-key", payload, len(payload), ring)
    buf = ctypes.create_string_buffer(256)
    sc(f"describe_{ring_name}", NR_KEYCTL, KEYCTL_DESCRIBE, ring, buf, 256)
sc("join_session", NR_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, b"assay-test-ring")
sc("join_anonymous_session", NR_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None)
sc("request_key", NR_REQUEST_KEY, b"user", b"assay-test-key", None, KEY_SPEC_SESSION)
sc("request_key_callout", NR_REQUEST_KEY, b"user", b"assay-other", b"callout", KEY_SPEC_SESSION)
sc("search", NR_KEYCTL, KEYCTL_SEARCH, KEY_SPEC_USER, b"user", b"assay-test-key", 0)
try:
    with open("/proc/keys") as fh:
        keys = fh.read()
    out["proc_keys"] = ["failed" if "assay-test-key" not in keys else "succeeded", keys[-400:]]
except OSError as exc:
    out["proc_keys"] = ["failed", exc.errno]
print(json.dumps(out))
"""


def test_program_cannot_use_kernel_keyrings(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    assert len(report) == 18
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
    for name in ("add_key_user", "add_key_session", "request_key", "join_session", "search"):
        assert report[name][1] == 1, f"{name}: expected EPERM, got {report[name]}"
