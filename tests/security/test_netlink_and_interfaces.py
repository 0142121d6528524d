"""Claim: a sandboxed program cannot open netlink sockets (NETLINK_ROUTE and friends, the
kernel's configuration and audit channels), and the only network interface it can see,
if any, is its own loopback ``lo``: no host interface is visible or reachable.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os, socket

libc = ctypes.CDLL(None, use_errno=True)
NETLINK = {
    "route": 0, "usersock": 2, "sock_diag": 4, "nflog": 5, "xfrm": 6, "selinux": 7,
    "audit": 9, "netfilter": 12, "kobject_uevent": 15, "generic": 16, "crypto": 21,
}
out = {"netlink": {}, "interfaces": {}}
for name, proto in NETLINK.items():
    for kind in (socket.SOCK_RAW, socket.SOCK_DGRAM):
        key = f"{name}/{kind}"
        try:
            s = socket.socket(socket.AF_NETLINK, kind, proto)
            try:
                s.bind((0, 0))
                out["netlink"][key] = ["opened", s.getsockname()]
            finally:
                s.close()
        except OSError as exc:
            out["netlink"][key] = ["failed", exc.errno]
        fd = libc.socket(socket.AF_NETLINK, kind, proto)
        if fd >= 0:
            out["netlink"][key + "/libc"] = ["opened", fd]
            os.close(fd)
        else:
            out["netlink"][key + "/libc"] = ["failed", ctypes.get_errno()]

def names_from_proc_net_dev():
    with open("/proc/net/dev") as fh:
        lines = fh.read().splitlines()[2:]
    return sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)

def read_or_error(fn):
    try:
        return ["ok", fn()]
    except OSError as exc:
        return ["error", exc.errno]

ifs = out["interfaces"]
ifs["proc_net_dev"] = read_or_error(names_from_proc_net_dev)
ifs["sys_class_net"] = read_or_error(lambda: sorted(os.listdir("/sys/class/net")))
ifs["if_nameindex"] = read_or_error(lambda: sorted(n for _, n in socket.if_nameindex()))
ifs["proc_net_route"] = read_or_error(
    lambda: open("/proc/net/route").read().splitlines()[1:]
)
ifs["proc_net_if_inet6"] = read_or_error(lambda: open("/proc/net/if_inet6").read().split())
print(json.dumps(out))
"""


def test_program_cannot_use_netlink_or_see_host_interfaces(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    outcomes = json.loads(result.stdout)
    assert len(outcomes["netlink"]) == 44
    for name, outcome in outcomes["netlink"].items():
        assert outcome[0] == "failed", f"netlink {name} was opened: {outcome}"

    ifs = outcomes["interfaces"]
    for source in ("proc_net_dev", "sys_class_net", "if_nameindex"):
        state, value = ifs[source]
        if state == "ok":
            assert set(value) <= {"lo"}, f"{source} shows host interfaces: {value}"
    # No routes at all: not even a default route the program could try.
    state, routes = ifs["proc_net_route"]
    if state == "ok":
        assert routes == [], f"routing table is not empty: {routes}"
    state, addrs = ifs["proc_net_if_inet6"]
    if state == "ok":
        # Format: address index prefix scope flags name (6 fields per interface).
        names = set(addrs[5::6])
        assert names <= {"lo"}, f"IPv6 addresses on host interfaces: {addrs}"
