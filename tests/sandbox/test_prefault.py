"""A slot learns the pages a run writes from its calibration run, and its later program
processes fault them in before their requests (sandbox.py's ``_calibrate``, launcher.c's
``assay_report_pages`` and ``prefault``)."""

from __future__ import annotations

import pytest
from _pages import OWN_PAGES

from assay import Runner, SandboxConfig
from assay.sandbox import Sandbox
from assay.sandbox._inside import pyrun, wire
from assay.sandbox._run import RunRequest
from assay.sandbox._slots import SlotHandle
from assay.sandbox.sandbox import _prefault_order
from assay.types import ExecResult


def _native_fork(runner: Runner) -> None:
    runner.sandbox.warm_up(1, 0)
    if not runner.sandbox.zygote_info.get("native_fork"):
        pytest.skip("program processes are forked in Python on this host (no C compiler)")


def _orders(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The prefault orders sent to slots from now on."""
    sent: list[bytes] = []
    real_arm = SlotHandle.arm

    def arm(s: SlotHandle, cg: object, idle: bool = False) -> None:
        if s.first_order is not None:
            sent.append(s.first_order)
        real_arm(s, cg, idle)  # type: ignore[arg-type]

    monkeypatch.setattr(SlotHandle, "arm", arm)
    return sent


def _own_pages(config: SandboxConfig) -> list[int]:
    with Runner(Sandbox(config, pool_size=1)) as runner:
        _native_fork(runner)
        return [int(runner.run(OWN_PAGES).stdout) for _ in range(5)]


def test_a_run_finds_the_pages_its_slots_calibration_wrote_its_own() -> None:
    """What a run writes after its request is, with the pages learned, already its own when
    its program starts (the same program counts them: ~50 more here, every time)."""
    learned = _own_pages(SandboxConfig())
    without = _own_pages(SandboxConfig(prefault=False))
    assert min(learned) >= max(without) + 20, (learned, without)


def test_the_calibration_reports_the_pages_it_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _orders(monkeypatch)
    with Runner(Sandbox(SandboxConfig(), pool_size=1)) as runner:
        _native_fork(runner)
        assert runner.run("print(1)").stdout == b"1\n"
    (order,) = sent
    assert order.startswith(wire.PREFAULT)
    ranges = [tuple(map(int, line.split())) for line in order[len(wire.PREFAULT) :].splitlines()]
    pages = sum(size for _, size in ranges) // 4096
    assert 50 <= pages <= 2048, pages
    assert all(address % 4096 == 0 and size % 4096 == 0 for address, size in ranges)


def test_a_tenants_run_cannot_set_its_slots_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that passes the calibration's argument reports its own pages, to itself: the
    supervisor takes pages from its own calibration run only, once per slot."""
    sent = _orders(monkeypatch)
    sandbox = Sandbox(SandboxConfig(), pool_size=1)
    with Runner(sandbox) as runner:
        _native_fork(runner)
        assert len(sent) == 1
        files = [("main.py", b"print(1)\n", 0o644)]
        r = sandbox.execute(RunRequest("python", ["/work/main.py", pyrun.CALIBRATE], files))
        assert r.status == "ok" and r.stdout.startswith(b"1\n"), r
        assert runner.run("print(1)").stdout == b"1\n"
    assert len(sent) == 1


def test_a_pool_that_keeps_no_slot_calibrates_none(monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _orders(monkeypatch)
    with Runner(Sandbox(SandboxConfig(), pool_size=0)) as runner:
        for _ in range(3):
            assert runner.run("print(1)").stdout == b"1\n"
    assert sent == []


@pytest.mark.parametrize(
    ("stdout", "status", "order"),
    [
        (b"1\n4096 8192\n12288 4096\n", "ok", wire.PREFAULT + b"4096 8192\n12288 4096\n"),
        (b"1\n4096 8192\n", "time_limit", None),  # not a finished run
        (b"2\n4096 8192\n", "ok", None),  # not the calibration's output
        (b"1\n", "ok", None),  # no report
        (b"1\n4096 8192\nrm -rf /\n", "ok", None),  # a line of something else
        (b"1\n" + b"4096 4096\n" * 2049, "ok", None),  # more ranges than the init takes
    ],
)
def test_only_a_well_formed_report_becomes_an_order(
    stdout: bytes, status: str, order: bytes | None
) -> None:
    assert _prefault_order(ExecResult(status=status, stdout=stdout)) == order  # type: ignore[arg-type]
