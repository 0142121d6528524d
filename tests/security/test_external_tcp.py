"""Claim: a sandboxed program has no route to the outside world: TCP connections to public
addresses (1.1.1.1:53, 8.8.8.8:443, [2606:4700:4700::1111]:53) fail at once instead of
hanging or, worse, succeeding.

"At once" matters: a sandbox whose connect merely times out would still be probing the
network (and would let a program burn its wall-clock budget). Only the sandboxed program
sends anything; the host never talks to these addresses.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import json, socket, time

out = {}
for family, host, port in [
    (socket.AF_INET, "1.1.1.1", 53),
    (socket.AF_INET, "8.8.8.8", 443),
    (socket.AF_INET6, "2606:4700:4700::1111", 53),
]:
    key = f"{host}:{port}"
    start = time.monotonic()
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect((host, port))
        out[key] = ["connected", repr(s.getpeername()), time.monotonic() - start]
    except OSError as exc:
        out[key] = ["failed", exc.errno, str(exc), time.monotonic() - start]
print(json.dumps(out))
"""


def test_program_cannot_open_tcp_to_public_addresses(run_py) -> None:
    result = run_py(PROGRAM, wall_s=15)
    assert result.status == "ok", (result.status, result.stderr_text)
    outcomes = json.loads(result.stdout)
    assert len(outcomes) == 3
    for target, outcome in outcomes.items():
        assert outcome[0] == "failed", f"connected to {target}: {outcome}"
        assert outcome[-1] < 0.5, f"connect to {target} did not fail at once: {outcome}"
