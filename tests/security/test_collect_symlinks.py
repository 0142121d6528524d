"""Claim: files the supervisor touches in the work dir cannot be turned against it.

After a run the trusted side reads back the files it was asked to collect. The program can
replace such a file by a symlink (to ``/etc/shadow``, ``/proc/1/environ``, ``../..``), put a
symlinked directory on its path, make it a FIFO, or keep swapping it for a symlink from a
background process. Whatever it does, the collected content is never anything but bytes the
program wrote into a regular file of its own work dir (a file missing from ``result.files``
is fine). Before a run, input file names that are absolute, climb out with ``..``, or collide
(with each other or with the program's own file) are rejected with ``ValidationError``; they
never become a sandbox error or a write outside the work dir.
"""

from __future__ import annotations

import time

import pytest

from assay import Limits, RunRequest, ValidationError

LIMITS = Limits(time_s=2)

# (program, collect list): every program first writes a benign out.txt, then subverts it.
ATTACKS = {
    "file->/etc/shadow": ("os.symlink('/etc/shadow', 'out.txt')", ["out.txt"]),
    "file->/etc/passwd": ("os.symlink('/etc/passwd', 'out.txt')", ["out.txt"]),
    "file->/proc/1/environ": ("os.symlink('/proc/1/environ', 'out.txt')", ["out.txt"]),
    "file->/proc/self/root": ("os.symlink('/proc/self/root/etc/passwd', 'out.txt')", ["out.txt"]),
    "file->../..": ("os.symlink('../..', 'out.txt')", ["out.txt"]),
    "relative-file->../etc": ("os.symlink('../etc/passwd', 'out.txt')", ["out.txt"]),
    "dir->/": ("os.symlink('/', 'd')", ["d/etc/passwd", "d/proc/1/environ"]),
    "dir->/proc/1": ("os.symlink('/proc/1', 'd')", ["d/environ", "d/cmdline", "d/root/etc/passwd"]),
    "dir->..": ("os.symlink('..', 'd')", ["d/etc/passwd", "d/work/out.txt"]),
    "nested-dir->/etc": (
        "os.mkdir('sub'); os.symlink('/etc', 'sub/e')",
        ["sub/e/passwd", "sub/e/hostname"],
    ),
    "fifo": ("os.mkfifo('out.txt')", ["out.txt"]),
    "swapper": (
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    while True:\n"
        "        try:\n"
        "            os.symlink('/etc/passwd', 'tmp.ln'); os.rename('tmp.ln', 'out.txt')\n"
        "            open('tmp.txt', 'w').write('mine'); os.rename('tmp.txt', 'out.txt')\n"
        "        except OSError:\n"
        "            pass\n"
        "time.sleep(0.2)",
        ["out.txt"],
    ),
}

PROLOGUE = "import os, time\nopen('out.txt', 'w').write('mine')\nos.unlink('out.txt')\n"


@pytest.mark.parametrize(("attack", "collect"), ATTACKS.values(), ids=ATTACKS.keys())
def test_collected_files_never_follow_symlinks(runner, attack: str, collect: list[str]) -> None:  # type: ignore[no-untyped-def]
    code = PROLOGUE + attack + "\n"
    started = time.monotonic()
    result = runner.sandbox.execute(
        RunRequest(
            "python",
            ["/work/main.py"],
            [("main.py", code.encode(), 0o644)],
            limits=LIMITS,
            collect=collect,
        )
    )
    elapsed = time.monotonic() - started

    assert result.status in ("ok", "runtime_error"), (result.status, result.stderr[-2000:])
    # Only bytes the program itself wrote to a regular file may come back.
    leaked = {path: data for path, data in result.files.items() if data != b"mine"}
    assert leaked == {}, f"collected through a link: {leaked}"
    assert elapsed < 2 * LIMITS.effective_wall_s, "collecting blocked"


def test_benign_collection_still_works(runner) -> None:  # type: ignore[no-untyped-def]
    """The control: without tricks, the file does come back (so absence above means refusal)."""
    code = "import os\nos.mkdir('sub')\nopen('sub/out.txt', 'w').write('mine')\n"
    result = runner.sandbox.execute(
        RunRequest(
            "python",
            ["/work/main.py"],
            [("main.py", code.encode(), 0o644)],
            limits=LIMITS,
            collect=["sub/out.txt"],
        )
    )
    assert result.status == "ok", (result.status, result.stderr[-2000:])
    assert result.files == {"sub/out.txt": b"mine"}


BAD_NAMES = [
    "../x",
    "../../etc/cron.d/x",
    "/etc/passwd",
    "/work/x",
    "a/../../x",
    "./../x",
    "..",
    ".",
    "",
    "a\x00b",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_escaping_input_names_are_rejected(runner, name: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError):
        runner.run("print(1)", limits=LIMITS, files={name: "x"})
    with pytest.raises(ValidationError):
        runner.sandbox.execute(RunRequest("exec", ["/bin/true"], [(name, b"x", 0o644)]))
    with pytest.raises(ValidationError):
        runner.sandbox.execute(RunRequest("exec", ["/bin/true"], collect=[name]))


COLLIDING = {
    "program-file": {"main.py": "print('not the program')"},
    "program-file-dotted": {"./main.py": "x"},
    "program-file-via-dotdot": {"sub/../main.py": "x"},
    "file-vs-directory": {"a": "x", "a/b": "y"},
}


@pytest.mark.parametrize("files", COLLIDING.values(), ids=COLLIDING.keys())
def test_colliding_input_names_are_rejected(runner, files: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """A name clash is the caller's mistake: a ValidationError, not the sandbox's fault."""
    try:
        result = runner.run("print('the program')", limits=LIMITS, files=files)
    except ValidationError:
        return
    pytest.fail(
        f"accepted colliding input names {sorted(files)}: status {result.status!r}, "
        f"stdout {result.stdout!r}, stderr {result.stderr[-300:]!r}"
    )
