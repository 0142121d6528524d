"""What a Python run inherits from the fork server, and what it must not have to redo.

Every page a run writes is copied from the server's image, and every page it maps is torn
down at its exit; these tests pin the properties that keep that work small and, above all,
the same in every run (a run must not pay for the state a particular server happened to be
in).
"""

from __future__ import annotations

import json

from assay import Runner

# Interns many fresh names and reports the largest single allocation any of them caused:
# a resize of the interpreter's table of interned strings allocates hundreds of KiB.
INTERN_PROBE = """\
import json, sys, _tracemalloc
_tracemalloc.start(1)
worst = 0
for i in range(5000):
    before = _tracemalloc.get_traced_memory()[1]
    sys.intern("probe_name_%d" % i)
    worst = max(worst, _tracemalloc.get_traced_memory()[1] - before)
_tracemalloc.stop()
print(json.dumps({"worst": worst}))
"""


def test_a_run_can_intern_5000_names_without_growing_the_table(runner: Runner) -> None:
    r = runner.run(INTERN_PROBE)
    assert r.status == "ok", r.stderr
    assert json.loads(r.stdout)["worst"] < 32768, "the run had to build a new interned table"
    info = runner.sandbox.zygote_info
    assert int(info.get("interned_headroom", 0)) > 0, info


def test_a_run_starts_with_no_young_objects_of_the_server(runner: Runner) -> None:
    # The server's objects are frozen (out of every collection): a run's first collections
    # walk only what the run made, so they cost the same in every slot.
    r = runner.run(
        "import gc\nprint(sum(len(gc.get_objects(i)) for i in range(3)), gc.get_freeze_count())"
    )
    assert r.status == "ok", r.stderr
    young, frozen = map(int, r.stdout.split())
    assert young < 200, young
    assert frozen > 1000, frozen


def test_the_image_leaves_out_what_runs_rarely_use(runner: Runner) -> None:
    r = runner.run(
        "import sys\n"
        "print(' '.join(m for m in ('dataclasses', 'inspect', 'traceback', 'typing', 're')"
        " if m in sys.modules))"
    )
    assert r.status == "ok", r.stderr
    assert r.stdout.split() == [b"typing", b"re"]
    # ... and a program that wants them still gets them.
    r = runner.run("import dataclasses, traceback\nprint(dataclasses.is_dataclass(1))")
    assert (r.status, r.stdout) == ("ok", b"False\n"), r.stderr


# What a forked interpreter needs from the fork itself (os.fork's hooks run around it, also
# when the program process is forked in C, native.py's fork_program): the main thread is the
# main thread (signal handlers can be set), threads start, the program can fork and wait, and
# at-fork handlers registered by the program run.
INTERPRETER_PROBE = """\
import json, os, signal, threading
out = {"main": threading.current_thread() is threading.main_thread()}
signal.signal(signal.SIGUSR1, lambda *a: out.__setitem__("signal", True))
os.kill(os.getpid(), signal.SIGUSR1)
box = []
t = threading.Thread(target=lambda: box.append(1)); t.start(); t.join()
out["thread"] = box == [1]
os.register_at_fork(after_in_child=lambda: os.write(w, b"hook"))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
os.close(w)
out["child"] = os.waitstatus_to_exitcode(status)
out["hook"] = os.read(r, 10).decode()
print(json.dumps(out))
"""


def test_a_run_is_a_whole_interpreter(runner: Runner) -> None:
    r = runner.run(INTERPRETER_PROBE)
    assert r.status == "ok", r.stderr
    got = json.loads(r.stdout)
    assert got == {"main": True, "signal": True, "thread": True, "child": 7, "hook": "hook"}
    # The default sandbox forks Python program processes in C where it can: this test is
    # about that path (the Python one is the fallback without a compiler).
    assert runner.sandbox.zygote_info.get("native_fork"), runner.sandbox.zygote_info
