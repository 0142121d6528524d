"""Claim: a sandboxed program cannot call bpf(2) or perf_event_open(2), two kernel
surfaces behind many privilege escalations and side channels.

Each call is well formed (a map creation, a two-instruction socket-filter program load, a
software CPU-clock counter on the program itself), so that only a policy refusal, not a
malformed request, makes it fail.
"""

from __future__ import annotations

import json

PROGRAM = r"""
import ctypes, json, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_BPF, NR_PERF_EVENT_OPEN = 321, 298
out = {}

def record(name, res):
    out[name] = ["failed", ctypes.get_errno()] if res < 0 else ["succeeded", res]
    if res >= 0:
        os.close(res)

# BPF_MAP_CREATE: an array map of 1 x u32 -> u64.
class MapAttr(ctypes.Structure):
    _fields_ = [("map_type", ctypes.c_uint32), ("key_size", ctypes.c_uint32),
                ("value_size", ctypes.c_uint32), ("max_entries", ctypes.c_uint32),
                ("pad", ctypes.c_uint8 * 112)]
attr = MapAttr(2, 4, 8, 1)  # BPF_MAP_TYPE_ARRAY
ctypes.set_errno(0)
record("bpf_map_create", libc.syscall(NR_BPF, 0, ctypes.byref(attr), ctypes.sizeof(attr)))

# BPF_PROG_LOAD: "r0 = 0; exit" as a socket filter (the unprivileged program type).
insns = (ctypes.c_uint64 * 2)(0x00000000000000B7, 0x0000000000000095)
license = ctypes.create_string_buffer(b"GPL")
class ProgAttr(ctypes.Structure):
    _fields_ = [("prog_type", ctypes.c_uint32), ("insn_cnt", ctypes.c_uint32),
                ("insns", ctypes.c_uint64), ("license", ctypes.c_uint64),
                ("pad", ctypes.c_uint8 * 128)]
pattr = ProgAttr(1, 2, ctypes.addressof(insns), ctypes.addressof(license))  # SOCKET_FILTER
ctypes.set_errno(0)
record("bpf_prog_load", libc.syscall(NR_BPF, 5, ctypes.byref(pattr), ctypes.sizeof(pattr)))
ctypes.set_errno(0)
record("bpf_prog_get_next_id", libc.syscall(NR_BPF, 11, ctypes.byref(pattr), ctypes.sizeof(pattr)))

class PerfAttr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("rest", ctypes.c_uint8 * 80)]
EXCLUDE_KERNEL, EXCLUDE_HV = 1 << 5, 1 << 6
for name, type_, config in (("sw_cpu_clock", 1, 0), ("sw_task_clock", 1, 1),
                            ("hw_cycles", 0, 0), ("tracepoint", 2, 1)):
    pa = PerfAttr()
    pa.type, pa.size, pa.config = type_, ctypes.sizeof(PerfAttr), config
    pa.flags = EXCLUDE_KERNEL | EXCLUDE_HV
    ctypes.set_errno(0)
    # pid 0 = this process, cpu -1 = any: the least privileged form there is.
    record(f"perf_{name}", libc.syscall(NR_PERF_EVENT_OPEN, ctypes.byref(pa), 0, -1, -1, 0))
print(json.dumps(out))
"""


def test_program_cannot_use_bpf_or_perf_events(run_py) -> None:
    result = run_py(PROGRAM)
    assert result.status == "ok", (result.status, result.stderr_text)
    report = json.loads(result.stdout)
    assert len(report) == 7
    for name, outcome in report.items():
        assert outcome[0] == "failed", f"{name} succeeded: {outcome}"
        assert outcome[1] == 1, f"{name}: expected EPERM (refused by policy), got {outcome}"
