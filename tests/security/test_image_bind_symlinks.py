"""A hostile task image whose every bind source is a symlink to a host path.

The sandbox of an image-rooted run binds the image's runtime directories (``/lib``,
``/bin`` ...) and a few ``/etc`` entries (``alternatives``, ``java-17-openjdk``,
``ld.so.cache`` ...) into its template. The fork server that does so runs with the image as
its ``/`` but with a procfs and device nodes of its own mounted there; an image whose
``etc/alternatives`` is a link to ``/dev``, ``etc/java-17-openjdk`` to ``/proc`` or
``etc/localtime`` to ``/proc/1/root/<host file>`` handed every program of that image the
host's ``/dev``, every host process's command line, or any host file. The image here is
made by the test (the host's Python 3.11 and its libraries, hard-linked into a private
store, with no importer in between to neutralise the links), and the program looks for
anything of the host: a marker in a host file and in a host process's command line, and
device nodes beyond the sandbox's own five.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _hostile_image import HOST_PYTHON, tiny_rootfs

from assay import Runner, defaults
from assay.images import Image, ImageStore

#: The program: walks every bind destination (and /dev), following the top-level link,
#: not the ones below it; reads every regular file's first 64 KiB; lists device nodes. The
#: sandbox's own procfs (its /proc) is skipped: its processes are the run's own.
PROBE = r"""
import json, os, stat, sys
mark = sys.argv[1].encode() if len(sys.argv) > 1 else MARK
own_proc = os.stat("/proc").st_dev
found = {"marker": [], "devices": [], "files": 0}
seen = set()
def visit(path, depth, follow):
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return
    if st.st_dev == own_proc or (st.st_dev, st.st_ino) in seen or found["files"] > 60000:
        return
    seen.add((st.st_dev, st.st_ino))
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        found["devices"].append([path, st.st_rdev])
    elif stat.S_ISREG(st.st_mode):
        found["files"] += 1
        try:
            with open(path, "rb") as fh:
                if mark in fh.read(65536):
                    found["marker"].append(path)
        except OSError:
            pass
    elif stat.S_ISDIR(st.st_mode) and depth < 4:
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            visit(os.path.join(path, name), depth + 1, False)
for top in ROOTS:
    visit(top, 0, True)
print(json.dumps(found))
"""


#: The device numbers of the sandbox's own /dev (the five nodes of the default tier; gVisor
#: adds its own emulated ones: ptmx, tty, fuse).
OWN_DEVICES = """
import json, os, stat
own = set()
for dirpath, dirs, names in os.walk("/dev"):
    for name in names:
        st = os.lstat(os.path.join(dirpath, name))
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            own.add(st.st_rdev)
print(json.dumps(sorted(own)))
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ImageStore, Image, str]]:
    """A private store holding the hostile image, and the marker of the host's secrets."""
    if os.geteuid() != 0 or not os.path.exists(HOST_PYTHON) or shutil.which("ldd") is None:
        pytest.skip(f"needs root, {HOST_PYTHON} and ldd (Debian 12's python3.11) on the host")
    base = tmp_path_factory.mktemp("hostile-image")
    mark = "host-secret-" + uuid.uuid4().hex
    secrets = base / "host-secrets"
    secrets.mkdir()
    for name in ("secret", "openssl.cnf", "ld.so.conf"):
        (secrets / name).write_text(mark + "\n")
    store = ImageStore(base / "store")
    staging = store.staging()
    rootfs = Path(staging, "rootfs")
    rootfs.mkdir()
    tiny_rootfs(rootfs)
    host = f"/proc/{os.getpid()}/root{secrets}"  # the host's root, seen through this process
    etc = rootfs / "etc"
    etc.mkdir()
    # Every /etc entry the sandbox binds (defaults.ETC_BINDS; ssl/openssl.cnf is the
    # control below) and the runtime directories python3 does not need (defaults.RO_BINDS).
    etc_links = (
        ("alternatives", "/dev"),
        ("java-17-openjdk", "/proc"),
        ("ld.so.conf.d", "/proc/sys/kernel"),
        ("ld.so.cache", "/proc/1/environ"),
        ("ld.so.conf", "../../../.." + str(secrets / "ld.so.conf")),
        ("localtime", "/dev/kmsg"),
        ("mime.types", "/proc/1/cmdline"),
    )
    assert {name for name, _ in etc_links} == set(defaults.ETC_BINDS) - {"ssl/openssl.cnf"}
    runtime_links = (
        ("lib", "/proc/1/root/usr/lib"),
        ("bin", "/dev"),
        ("sbin", "/proc"),
        ("lib32", host),
        ("libx32", "/proc/1/root"),
    )
    for rel, target in [*(("etc/" + k, v) for k, v in etc_links), *runtime_links]:
        os.symlink(target, rootfs / rel)
    # A link within the image is no attack: it resolves as if the image were / (a control).
    (rootfs / "usr/share").mkdir()
    (rootfs / "usr/share/assay-legit.cnf").write_text("legit\n")
    (etc / "ssl").mkdir()
    os.symlink("/usr/share/assay-legit.cnf", etc / "ssl/openssl.cnf")
    image = store.commit(staging, "a" * 64, "hostile-binds", "test", {})
    # A host process whose command line carries the marker: any host procfs shows it.
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", mark])
    try:
        yield store, image, mark
    finally:
        sleeper.kill()
        sleeper.wait()
        shutil.rmtree(base, ignore_errors=True)


def test_nothing_of_the_host_is_visible_through_an_images_links(
    hostile: tuple[ImageStore, Image, str], gvisor: bool
) -> None:
    store, image, mark = hostile
    roots = ["/etc", "/dev", "/lib", "/bin", "/sbin", "/lib32", "/libx32"]
    roots += ["/usr/lib/python3.11/json", "/usr/lib/python3.11/email"]  # a control
    code = PROBE.replace("MARK", repr(mark.encode())).replace("ROOTS", repr(roots))
    with Runner() as runner:
        runner.images.store = store
        res = runner.run(code, image=image.id)
        allowed = runner.run(OWN_DEVICES, image=image.id)
        legit = runner.run("print(open('/etc/ssl/openssl.cnf').read(), end='')", image=image.id)
    assert legit.stdout == b"legit\n", legit.stderr
    assert res.status == "ok", res.stderr
    found = json.loads(res.stdout)
    assert found["files"] > 20  # the walk ran (the control: the image's own json, email)
    assert found["marker"] == []  # no host file, no host process's command line
    own = set(json.loads(allowed.stdout))
    assert len(own) == 5 or gvisor  # the default tier's five; gVisor's own set otherwise
    assert [d for d in found["devices"] if d[1] not in own] == []  # no host device node
