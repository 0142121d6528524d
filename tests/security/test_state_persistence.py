"""Claim: nothing a run leaves behind is visible to the next run, even on the same slot.

Run 1 scatters markers everywhere it can write: the work dir, a sub-directory, /tmp, $HOME,
/dev/shm, a SysV shared-memory segment and a POSIX message queue; it also gets an input file
of its own, and tampers with the interpreter's pre-imported modules. (Creating the IPC objects may
already be refused; if it is not, they must not outlive the run.) Later runs, in a pool of
one slot (so they reuse run 1's namespaces) and in the shared pool, must find a pristine world:
only their own ``main.py`` in /work, empty /tmp and /dev/shm, no IPC objects, untouched modules.
"""

from __future__ import annotations

import json
import uuid

from assay import Limits, Runner, RunRequest

IPC_KEY = 0x5A55A7

WRITER = r"""
import builtins, ctypes, json, math, os, sys

tag = open("tag").read()
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir("sub")
for path in [f"/work/m-{tag}", f"sub/m-{tag}", f"/tmp/m-{tag}", os.path.expanduser(f"~/.m-{tag}"),
             f"/dev/shm/m-{tag}"]:
    with open(path, "w") as fh:
        fh.write(tag)
    os.chmod(path, 0o444)
os.chmod("sub", 0o555)

made = {}
shmid = libc.shmget(KEY, 4096, 0o1000 | 0o666)           # IPC_CREAT
made["shm"] = shmid >= 0
if shmid >= 0:
    libc.shmat.restype = ctypes.c_void_p
    addr = libc.shmat(shmid, None, 0)
    ctypes.memmove(addr, tag.encode(), len(tag))
# mq_open is librt's before glibc 2.34 (a task image's older C library)
mq_open = getattr(libc, "mq_open", None) or ctypes.CDLL("librt.so.1", use_errno=True).mq_open
mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
made["mq"] = mq_open(f"/m-{tag}".encode(), 0o100 | 0o2, 0o666, None) >= 0  # O_CREAT|O_RDWR
print(json.dumps(made))

json.dumps = lambda *a, **k: "tampered"
math.pi = 3
builtins.TAMPERED = tag
sys.path.insert(0, "/tmp")
""".replace("KEY", str(IPC_KEY))

READER = r"""
import builtins, ctypes, json, math, os, sys

libc = ctypes.CDLL(None, use_errno=True)
seen = {}
for root in ("/work", "/tmp", "/dev/shm"):
    seen[root] = sorted(os.path.relpath(os.path.join(d, f), root)
                        for d, dirs, files in os.walk(root) for f in files + dirs)
mq_open = getattr(libc, "mq_open", None) or ctypes.CDLL("librt.so.1", use_errno=True).mq_open
mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
seen["shm"] = libc.shmget(KEY, 0, 0)
seen["mq"] = mq_open(("/m-" + sys.argv[1]).encode(), 0)
seen["json"] = json.dumps([1])
seen["pi"] = math.pi
seen["builtins"] = hasattr(builtins, "TAMPERED")
seen["path"] = "/tmp" in sys.path
seen["pid_ns"] = os.readlink("/proc/self/ns/pid")
print(json.dumps(seen))
""".replace("KEY", str(IPC_KEY))


def _pristine(seen: dict[str, object]) -> dict[str, object]:
    return {
        "/work": ["main.py"],
        "/tmp": [],
        "/dev/shm": [],
        "shm": -1,
        "mq": -1,
        "json": "[1]",
        "pi": 3.141592653589793,
        "builtins": False,
        "path": False,
        "pid_ns": seen["pid_ns"],
    }


def _read(runner: Runner, tag: str) -> dict[str, object]:
    # The reader takes the tag on argv (not a file), so /work must hold main.py only.
    result = runner.sandbox.execute(
        RunRequest(
            "python",
            ["/work/main.py", tag],
            [("main.py", READER.encode(), 0o644)],
            limits=Limits(time_s=2),
        )
    )
    assert result.status == "ok", (result.status, result.stderr[-2000:])
    seen: dict[str, object] = json.loads(result.stdout)
    return seen


def test_nothing_persists_between_runs(runner, one_slot_runner) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex
    limits = Limits(time_s=2)
    files = {"tag": tag, f"input-{tag}.txt": "run 1's own input"}

    # One slot: every read-back run reuses the writer's namespaces.
    first = one_slot_runner.run(WRITER, limits=limits, files=files)
    assert first.status == "ok", (first.status, first.stderr[-2000:])
    for _ in range(2):
        seen = _read(one_slot_runner, tag)
        assert seen == _pristine(seen), f"run 1 left state behind: {seen}"

    # The shared pool: the writer lands on some slot; read back on more runs than it has slots.
    first = runner.run(WRITER, limits=limits, files=files)
    assert first.status == "ok", (first.status, first.stderr[-2000:])
    for _ in range(runner.sandbox.pool_size + 2):
        seen = _read(runner, tag)
        assert seen == _pristine(seen), f"run 1 left state behind: {seen}"
