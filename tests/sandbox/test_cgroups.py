"""Per-run cgroup backends: behaviour that does not need a run."""

from __future__ import annotations

import contextlib
import os

import pytest

from assay.sandbox import cgroups


def test_a_stale_session_reclaimed_by_another_supervisor_meanwhile_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two supervisors starting at once both find a crashed one's session; the first to get
    # there removes it while the second lists it. The second must carry on, not fail.
    backend = cgroups.detect()
    if backend is None or os.geteuid() != 0:
        pytest.skip("needs root and cgroups (v1 or v2)")
    try:
        parent = backend.base if backend.version == "v1" else backend.parent  # type: ignore[attr-defined]
        stale = os.path.join(parent, "s999999999-0-0")  # no such pid: stale
        for _ in range(50):  # another worker's supervisor may reclaim it as we make it
            try:
                os.makedirs(os.path.join(stale, "r0"), exist_ok=True)
                break
            except FileNotFoundError:
                continue
        real = cgroups._session_is_stale

        def raced(name: str) -> bool:
            if name == "s999999999-0-0" and os.path.isdir(stale):
                for d in (os.path.join(stale, "r0"), stale):  # the other supervisor got
                    with contextlib.suppress(FileNotFoundError):  # there first
                        os.rmdir(d)
                return True
            return real(name)

        monkeypatch.setattr(cgroups, "_session_is_stale", raced)
        backend.reclaim_stale()
        assert not os.path.exists(stale)
    finally:
        backend.close()
