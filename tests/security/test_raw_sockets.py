"""Claim: a sandboxed program cannot open raw or packet sockets (AF_INET/AF_INET6
SOCK_RAW, AF_PACKET), the tools for forging packets and sniffing traffic.

Each attempt uses both the socket module and the bare ``socket`` syscall through libc, so
a wrapper-level refusal could not hide a kernel that says yes.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os, socket

libc = ctypes.CDLL(None, use_errno=True)
ETH_P_ALL = 0x0003  # SOCK_PACKET (10) is the legacy packet socket type
cases = [
    ("inet_raw_icmp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    ("inet_raw_tcp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP),
    ("inet_raw_ipproto_raw", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
    ("inet6_raw_icmpv6", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
    ("inet_ping_dgram", socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),
    ("packet_raw", socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL)),
    ("packet_dgram", socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL)),
    ("inet_packet_legacy", socket.AF_INET, 10, socket.htons(ETH_P_ALL)),
]
out = {}
for name, family, kind, proto in cases:
    try:
        s = socket.socket(family, kind, proto)
        out[name] = ["opened", s.fileno()]
        s.close()
    except OSError as exc:
        out[name] = ["failed", exc.errno, str(exc)]
    fd = libc.socket(family, kind, proto)
    if fd >= 0:
        out[name + "_libc"] = ["opened", fd]
        os.close(fd)
    else:
        out[name + "_libc"] = ["failed", ctypes.get_errno()]
print(json.dumps(out))
"""


def test_program_cannot_open_raw_or_packet_sockets(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    outcomes = json.loads(result.stdout)
    assert len(outcomes) == 16
    for name, outcome in outcomes.items():
        assert outcome[0] == "failed", f"{name} socket was opened: {outcome}"
