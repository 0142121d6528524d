"""Claim: a run cannot watch what concurrent runs open in the shared read-only tree.

Attack (red-team finding 8): every sandbox sees the host's ``/usr`` read-only, and an inotify
watch on it reports each file a concurrent run opens (which library, which test data): a
side channel from one run to another. Watches are now refused outside the run's writable
places; a program that asks gets EPERM, as if inotify were not permitted to it.
"""

from __future__ import annotations

import json
import threading
import time

from assay import Limits, Runner, Sandbox

WATCHER = r"""
import ctypes, json, os, select, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
out = {"init": fd >= 0, "watches": {}}
IN_OPEN, IN_ACCESS = 0x20, 0x1
lib = os.path.dirname(os.__file__).encode()  # /usr/lib/python3.X, whatever the image's X
for path in (lib, lib + b"/json", b"/usr", b"/etc", b"/proc"):
    ctypes.set_errno(0)
    wd = libc.inotify_add_watch(fd, path, IN_OPEN | IN_ACCESS)
    out["watches"][path.decode()] = wd if wd >= 0 else os.strerror(ctypes.get_errno())
events = 0
deadline = time.monotonic() + 2.5
while time.monotonic() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if ready:
        try:
            events += len(os.read(fd, 65536))
        except BlockingIOError:
            pass
out["event_bytes"] = events
print(json.dumps(out))
"""

# Opens files under /usr the watcher watches, while the watcher waits for events.
VICTIM = """
import time
for _ in range(20):
    import importlib, sys
    sys.modules.pop("json", None)
    importlib.import_module("json")
    open(sys.modules["json.decoder"].__file__).read()
    time.sleep(0.05)
print("done")
"""


def test_watches_on_shared_tree_are_refused_and_see_no_concurrent_run() -> None:
    with Runner(Sandbox(pool_size=3)) as runner:
        results: dict[str, object] = {}

        def watch() -> None:
            results["watcher"] = runner.run(WATCHER, limits=Limits(time_s=5, wall_s=6))

        t = threading.Thread(target=watch)
        t.start()
        time.sleep(0.5)
        victim = runner.run(VICTIM)
        t.join()
    assert victim.status == "ok" and victim.stdout == b"done\n"
    watcher = results["watcher"]
    assert watcher.status == "ok", (watcher.status, watcher.stderr[-500:])  # type: ignore[attr-defined]
    report = json.loads(watcher.stdout)  # type: ignore[attr-defined]
    for path, wd in report["watches"].items():
        assert not isinstance(wd, int), f"inotify watch on {path} was allowed (wd {wd})"
    assert report["event_bytes"] == 0
