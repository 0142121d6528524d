"""Runs on a task image: its Python, none of the host's tools, every control unchanged."""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _archives import layer_tar, oci_archive

from assay import Limits, Runner
from assay.images import Image, ImageNotFound, ImageStore, import_image
from assay.judge import Judge, Problem, Submission, TestCase
from assay.sessions import Session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def image_runner() -> Iterator[Runner]:
    with Runner() as r:
        yield r


def test_image_python_is_the_images_not_the_hosts(image_runner: Runner, py39_image: Image) -> None:
    code = "import sys, json; print(json.dumps(list(sys.version_info[:2])))"
    res = image_runner.run(code, image=py39_image.id)
    assert res.status == "ok", res.stderr
    assert res.stdout == b"[3, 9]\n"
    assert sys.version_info[:2] != (3, 9)
    host = image_runner.run(code)
    assert host.stdout == f"[{sys.version_info[0]}, {sys.version_info[1]}]\n".encode()
    # By name too, and the pool stays warm: a second run reuses it.
    again = image_runner.run("import sys; print(sys.version_info[1])", image="test-py39")
    assert again.stdout == b"9\n"
    assert image_runner.images.warm() == [py39_image.id]


def test_a_tool_the_image_lacks_is_not_the_hosts_copy(
    image_runner: Runner, py39_image: Image
) -> None:
    host_tools = [t for t in ("gcc", "ruff", "g++", "node") if shutil.which(t)]
    assert host_tools, "the host should have at least one of these tools"
    probe = (
        "import os, shutil\n"
        f"for t in {host_tools!r}: print(t, shutil.which(t, path='/usr/local/bin:/usr/bin:/bin'))\n"
        "print(os.path.exists('/usr/lib/python3.11'), os.path.exists('/usr/local/bin/ruff'))\n"
    )
    res = image_runner.run(probe, image=py39_image.id)
    assert res.status == "ok", res.stderr
    lines = res.stdout.decode().splitlines()
    assert lines[:-1] == [f"{t} None" for t in host_tools]
    assert lines[-1] == "False False"
    shell = image_runner.run("command -v gcc || echo missing", "bash", image=py39_image.id)
    assert shell.stdout == b"missing\n"


def test_controls_are_unchanged_in_an_image(image_runner: Runner, py39_image: Image) -> None:
    img = py39_image.id
    who = image_runner.run(
        "import os, socket\n"
        "print(os.getuid() != 0, os.getgid() != 0)\n"
        "try:\n socket.create_connection(('1.1.1.1', 80), timeout=1); print('net')\n"
        "except OSError: print('no net')\n"
        "try:\n open('/usr/x', 'w'); print('wrote')\n"
        "except OSError: print('read-only')\n",
        image=img,
    )
    assert who.stdout == b"True True\nno net\nread-only\n", who.stderr
    spin = image_runner.run("while True: pass", limits=Limits(time_s=0.3), image=img)
    assert spin.status == "time_limit" and spin.cpu_s >= 0.3
    mem = image_runner.run(
        "x = bytearray(400 << 20)", limits=Limits(memory_mb=64, time_s=5), image=img
    )
    assert mem.status == "memory_limit"
    flood = image_runner.run(
        "import sys\nwhile True: sys.stdout.write('x' * 65536)",
        limits=Limits(output_bytes=1 << 16, time_s=5),
        image=img,
    )
    assert flood.status == "output_limit" and flood.stdout_truncated
    made = image_runner.run(
        "open('out.txt', 'w').write(open('in.txt').read() * 2)",
        files={"in.txt": "ab"},
        collect=["out.txt"],
        image=img,
    )
    assert made.status == "ok" and made.files == {"out.txt": b"abab"}


def test_unknown_image_is_refused(image_runner: Runner) -> None:
    with pytest.raises(ImageNotFound):
        image_runner.run("print(1)", image="no-such-image")


def test_an_imported_oci_image_runs(
    tmp_path: Path, image_runner: Runner, py39_image: Image
) -> None:
    """An OCI archive assembled here from the built root plus a layer deleting perl."""
    base = tmp_path / "base.tar"
    with tarfile.open(base, "w") as tar:
        for entry in sorted(Path(py39_image.path).iterdir()):
            tar.add(entry, arcname=entry.name)
    top = layer_tar([("usr/bin/.wh.perl", "file", b""), ("usr/share/task.txt", "file", b"task\n")])
    archive = oci_archive(tmp_path / "task.oci.tar", [base.read_bytes(), top])
    store = ImageStore(tmp_path / "store")
    image = import_image(str(archive), store, name="task")
    assert image.python == "3.9"
    with Runner() as r:
        r.images.store = store
        res = r.run(
            "import os, sys; print(sys.version_info[1], open('/usr/share/task.txt').read().strip(),"
            " os.path.exists('/usr/bin/perl'))",
            image="task",
        )
    assert res.stdout == b"9 task False\n", res.stderr


def test_judging_a_problem_with_an_image(image_runner: Runner, py39_image: Image) -> None:
    """Every kind of test (the trusted call server and script harness included) runs on
    the image's Python 3.9."""
    code = (
        "import sys\ndef add(a, b):\n    return a + b\n"
        "if __name__ == '__main__': print(sys.version_info[1])\n"
    )
    tests = [
        TestCase(kind="call", options={"fn_name": "add", "args": [1, 2]}, expected_value=3),
        TestCase(kind="script", code="import sys\nassert sys.version_info[:2] == (3, 9)\n"),
        TestCase(kind="stdio", input="", expected="9\n"),
    ]
    judge = Judge(image_runner)
    for test in tests:
        problem = Problem("p", [test], image=py39_image.name)
        verdict = judge.judge(Submission(problem, code))
        assert verdict.verdict == "accepted", (test.kind, verdict)
        on_host = judge.judge(Submission(Problem("p", [test]), code))
        assert (on_host.verdict == "accepted") == (test.kind == "call"), (test.kind, on_host)


def test_a_session_in_an_image(image_runner: Runner, py39_image: Image) -> None:
    with Session(image_runner, image=py39_image.name) as session:
        step = session.exec("python3 -c 'import sys; print(sys.version_info[1])'; command -v gcc")
        assert step.stdout == b"9\n" and step.exit_code == 1
        assert py39_image.id in image_runner.images.warm()
        child = session.fork()
        try:
            assert (
                child.exec("python3 -c 'import sys; print(sys.version_info[1])'").stdout == b"9\n"
            )
        finally:
            child.close()


def test_pip_requirements_and_the_images_own_compiler(
    image_runner: Runner, security_image: Image
) -> None:
    """The spec's pip requirement (newer than Debian's python3-attrs 20.3) is what imports;
    C builds with the image's gcc 10, not the host's 12."""
    res = image_runner.run("import attr; print(attr.__version__)", image=security_image.id)
    assert res.stdout == b"23.2.0\n", res.stderr
    c = image_runner.run(
        '#include <stdio.h>\nint main(void){printf("%d\\n", __GNUC__);return 0;}',
        "c",
        image=security_image.id,
    )
    assert c.status == "ok" and c.stdout == b"10\n", c.stderr


def test_a_gvisor_run_leaves_the_stored_image_as_it_was(tmp_path: Path, py39_image: Image) -> None:
    """runsc makes a missing mount point in the root it is given (the stored image): the
    gVisor tier's relay directory is one of the store's own mount points, so nothing is
    added to an image by running in it."""
    from assay.sandbox import SandboxConfig
    from assay.sandbox.gvisor import available

    ok, why = available()
    if not ok:
        pytest.skip(f"gVisor tier: {why}")
    base = tmp_path / "base.tar"
    with tarfile.open(base, "w") as tar:
        for entry in sorted(Path(py39_image.path).iterdir()):
            # (without the mount point: an archive from elsewhere does not have it)
            tar.add(
                entry, arcname=entry.name, filter=lambda m: None if ".assay-uds" in m.name else m
            )
    store = ImageStore(tmp_path / "store")
    image = import_image(str(oci_archive(tmp_path / "t.oci.tar", [base.read_bytes()])), store)

    def tree() -> set[str]:
        return {
            os.path.relpath(os.path.join(d, n), image.path)
            for d, dirs, files in os.walk(image.path)
            for n in dirs + files
        }

    before = tree()
    with Runner(config=SandboxConfig(isolation="gvisor")) as r:
        r.images.store = store
        res = r.run("print(1)", image=image.id)
    assert res.stdout == b"1\n", res.stderr
    assert tree() - before == set()
