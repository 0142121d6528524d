"""Claim: a sandboxed program cannot resolve public DNS names: no resolver is reachable,
so ``getaddrinfo('example.com')`` (and the lower-level resolver paths) fail, quickly.

Name resolution is the classic side channel out of a network-less sandbox (a query for
``<secret>.attacker.example`` leaks data even when no TCP connection is possible).
"""

from __future__ import annotations

import json

PROGRAM = r"""
import json, os, socket, subprocess, time

out = {}

def attempt(name, fn):
    start = time.monotonic()
    try:
        out[name] = ["resolved", repr(fn()), time.monotonic() - start]
    except (OSError, subprocess.SubprocessError) as exc:
        out[name] = ["failed", getattr(exc, "errno", None), str(exc), time.monotonic() - start]

attempt("getaddrinfo", lambda: socket.getaddrinfo("example.com", 80))
attempt("gethostbyname", lambda: socket.gethostbyname("dns.google"))
attempt("getaddrinfo_v6", lambda: socket.getaddrinfo("one.one.one.one", 53, socket.AF_INET6))

def udp_query():
    # A hand-made DNS query for example.com/A straight to a public resolver.
    q = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(q, ("8.8.8.8", 53))
    return s.recvfrom(512)

attempt("udp_query", udp_query)

def getent():
    if not os.path.exists("/usr/bin/getent"):
        raise OSError(2, "no getent")
    p = subprocess.run(["/usr/bin/getent", "ahosts", "example.com"], capture_output=True, timeout=5)
    if p.returncode == 0 and p.stdout.strip():
        return p.stdout.decode()
    raise OSError(p.returncode, "getent failed")

attempt("getent", getent)
print(json.dumps(out))
"""


def test_program_cannot_resolve_public_names(run_py) -> None:
    result = run_py(PROGRAM, wall_s=20)
    assert result.status == "ok", (result.status, result.stderr_text)
    outcomes = json.loads(result.stdout)
    assert set(outcomes) == {
        "getaddrinfo",
        "gethostbyname",
        "getaddrinfo_v6",
        "udp_query",
        "getent",
    }
    for name, outcome in outcomes.items():
        assert outcome[0] == "failed", f"{name} resolved a public name: {outcome}"
        assert outcome[-1] < 2.0, f"{name} did not fail quickly (a resolver was tried): {outcome}"
