"""Slots as the supervisor sees them (sandbox/_slots.py): how an idle slot's arming is
handed over, and which arm orders a slot takes."""

from __future__ import annotations

import socket

import pytest

from assay import Runner
from assay.sandbox._inside import wire
from assay.sandbox._slots import SlotHandle
from assay.sandbox._zygote import readable


def _fresh_runner() -> Runner:
    runner = Runner()
    runner.sandbox.warm_up(slots=1, exec_slots=0)
    return runner


def test_an_idle_slot_is_handed_over_once_its_program_process_is_armed() -> None:
    """The slot's init sends "armed" (with the request socket) only once the program process
    has said "armed" on it: the supervisor finds both together, one wake-up per run."""
    with _fresh_runner() as runner:
        sandbox = runner.sandbox
        if not sandbox.zygote_info.get("native_fork"):
            pytest.skip("program processes are forked in Python on this host (no C compiler)")
        for _ in range(10):
            assert runner.run("print(1)").status == "ok"
            (slot,) = [s for kind in sandbox._idle.values() for s in kind]
            assert slot.req_sock is None and not slot.prog_armed  # left for the next run
            with slot.lock:
                assert readable(slot.sock, 10)
                data, fds = wire.recv_raw(slot.sock)
                assert data == wire.ARMED and len(fds) == 1
                slot.req_sock = socket.socket(fileno=fds[0])
                # Already there: no wait for the program process.
                assert wire.recv_raw(slot.req_sock, wire.DONTWAIT)[0] == wire.ARMED
                slot.prog_armed = True


def test_a_slot_refuses_an_arm_order_of_the_other_network_kind() -> None:
    """A slot's Landlock ruleset is of its kind (loopback TCP or none): an arm order of the
    other kind is an error the supervisor sees, not a run with the wrong ruleset."""
    with _fresh_runner() as runner:
        sandbox = runner.sandbox
        zygote = sandbox._zygote_for_run()
        sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        msg = {"op": "slot", "id": "other-kind", "max_runs": 2, "net": False}
        zygote.send(msg, [child.fileno()])
        child.close()
        handle = SlotHandle(sock, zygote, launcher=False, net=True)  # the wrong kind
        cg = sandbox._cg_pool.get() if sandbox._cg_pool is not None else None
        try:
            handle.arm(cg)  # a loopback arm order
            assert handle.wait_ready(10), handle.error
            assert not handle.wait_armed(10)
            assert "arm order of the other kind" in handle.error
        finally:
            handle.close()
            if cg is not None and sandbox._cg_pool is not None:
                sandbox._cg_pool.dispose(cg)
