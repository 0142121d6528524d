"""A program run by a fork server ends as ``python3 main.py`` ends (``sandbox/_inside/pyexit``):
its objects go (an unclosed file's buffer reaches the file, ``__del__`` runs, objects in
cycles too), an exit function's ``SystemExit`` does not change the status, non-daemon threads
finish. On every tier, and rooted at an image whose interpreter is older (3.9: its
``atexit._run_exitfuncs`` re-raises a failing exit function's exception)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from _tiers import tier_runner

from assay import Runner

#: (name, source, expected exit code, expected stdout, expected o.txt or None)
PROGRAMS: list[tuple[str, str, int, str, bytes | None]] = [
    ("unclosed file", "f = open('o.txt', 'w')\nf.write('hello')\n", 0, "", b"hello"),
    (
        "unclosed file, sys.exit",
        "import sys\nf = open('o.txt', 'w')\nf.write('hello')\nsys.exit(0)\n",
        0,
        "",
        b"hello",
    ),
    (
        "__del__ at exit",
        "class A:\n    def __del__(self):\n        print('bye')\na = A()\nprint('hi')\n",
        0,
        "hi\nbye\n",
        None,
    ),
    (
        "__del__ of an object in a cycle",
        "class A:\n    def __del__(self):\n        print('cycle')\na = A()\na.me = a\n",
        0,
        "cycle\n",
        None,
    ),
    (
        "exit function raising SystemExit",
        "import atexit, sys\natexit.register(sys.exit, 3)\nsys.exit(4)\n",
        4,
        "",
        None,
    ),
    (
        "exit function raising SystemExit after a clean end",
        "import atexit, sys\natexit.register(sys.exit, 3)\nprint('done')\n",
        0,
        "done\n",
        None,
    ),
    (
        "non-daemon thread",
        "import threading, time\n"
        "def late():\n    time.sleep(0.1)\n    print('late')\n"
        "threading.Thread(target=late).start()\n",
        0,
        "late\n",
        None,
    ),
    ("SystemExit with a message", "raise SystemExit('bad')", 1, "", None),
]
IDS = [p[0] for p in PROGRAMS]


@pytest.mark.parametrize(("name", "source", "code", "stdout", "written"), PROGRAMS, ids=IDS)
def test_the_table_is_what_the_interpreter_does(
    tmp_path: object, name: str, source: str, code: int, stdout: str, written: bytes | None
) -> None:
    """The expectations are the host interpreter's own behaviour (so the table cannot drift
    from what ``python3 main.py`` does)."""
    work = str(tmp_path)
    with open(os.path.join(work, "main.py"), "w") as fh:
        fh.write(source)
    done = subprocess.run(
        [sys.executable, "main.py"], cwd=work, capture_output=True, text=True, timeout=30
    )
    assert (done.returncode, done.stdout) == (code, stdout), done.stderr
    if written is not None:
        with open(os.path.join(work, "o.txt"), "rb") as fh:
            assert fh.read() == written


@pytest.fixture(scope="module", params=["default", "gvisor", "image"])
def tier(request: pytest.FixtureRequest) -> Iterator[tuple[Runner, str | None]]:
    with tier_runner(request.param) as t:
        yield t


@pytest.mark.slow
@pytest.mark.parametrize(("name", "source", "code", "stdout", "written"), PROGRAMS, ids=IDS)
def test_a_program_ends_as_the_interpreter_ends_it(
    tier: tuple[Runner, str | None],
    name: str,
    source: str,
    code: int,
    stdout: str,
    written: bytes | None,
) -> None:
    runner, image = tier
    res = runner.run(source, collect=["o.txt"] if written is not None else (), image=image)
    assert (res.exit_code, res.stdout.decode()) == (code, stdout), (name, res.stderr[-300:])
    if written is not None:
        assert res.files.get("o.txt") == written, name
