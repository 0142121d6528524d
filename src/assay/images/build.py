"""Building an image from a small declarative spec: Debian packages (mmdebstrap) plus pip.

A spec file (TOML or JSON)::

    name = "py39"
    suite = "bullseye"                       # a Debian suite the mirror serves
    packages = ["python3-minimal"]            # beyond the variant's own
    pip = ["attrs==23.2.0"]                   # optional; needs python3-pip in packages
    # mirror = "http://deb.debian.org/debian" # variant = "essential"; pip_args = [...]

The image id is the SHA-256 of the spec's canonical form (every field, defaults filled in,
lists sorted), so the same spec builds to the same id and a second build is answered from
the store. The build runs Debian's own tools (``mmdebstrap``, then the image's pip in its
chroot); that is trusted code from the package registry, not the task's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .._fs import open_dir_under, remove_at
from ..errors import BuildError, ValidationError
from .store import Image, ImageStore, check_name

DEFAULT_MIRROR = "http://deb.debian.org/debian"
HOST_CA = "/etc/ssl/certs/ca-certificates.crt"
#: Proxy settings passed through to the build tools (apt, pip).
PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
VARIANTS = ("essential", "minbase", "apt", "required", "important", "standard")
#: Part of every build id: bump when the build steps change what a spec produces.
BUILDER_VERSION = 3
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]*(=[A-Za-z0-9.+~:-]+)?$")
_SUITE = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class ImageSpec:
    """What an image is built from."""

    name: str
    suite: str
    packages: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    pip_args: tuple[str, ...] = ()
    mirror: str = DEFAULT_MIRROR
    variant: str = "essential"

    def __post_init__(self) -> None:
        check_name(self.name)
        if not _SUITE.match(self.suite):
            raise ValidationError("suite", f"{self.suite!r} is not a Debian suite name")
        for p in self.packages:
            if not _PACKAGE.match(p):
                raise ValidationError("packages", f"{p!r} is not a Debian package name")
        if self.variant not in VARIANTS:
            raise ValidationError("variant", f"{self.variant!r} is not one of {VARIANTS}")
        if not re.match(r"^(https?|file)://", self.mirror):
            raise ValidationError("mirror", f"{self.mirror!r} is not an http(s) or file URL")
        for r in self.pip:
            if not r or r.startswith("-") or "\n" in r:
                raise ValidationError("pip", f"{r!r} is not a requirement")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImageSpec:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValidationError(unknown[0], f"unknown spec field (known: {sorted(known)})")
        for key in ("name", "suite"):
            if not isinstance(data.get(key), str):
                raise ValidationError(key, "is required and must be a string")
        args: dict[str, Any] = dict(data)
        for key in ("packages", "pip", "pip_args"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise ValidationError(key, "must be a list of strings")
            args[key] = tuple(value)
        return cls(**args)

    @classmethod
    def load(cls, path: str) -> ImageSpec:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise ValidationError("spec", f"cannot read {path!r}: {exc}") from None
        try:
            data = json.loads(raw) if path.endswith(".json") else tomllib.loads(raw.decode())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValidationError("spec", f"{path!r} does not parse: {exc}") from None
        if not isinstance(data, dict):
            raise ValidationError("spec", "must be a table of fields")
        return cls.from_dict(data)

    @property
    def id(self) -> str:
        """The image id this spec builds to (the name is a label, not part of it)."""
        canon = asdict(self)
        canon.pop("name")
        canon["packages"] = sorted(set(self.packages))
        canon["pip"] = sorted(set(self.pip))
        canon["builder"] = BUILDER_VERSION
        text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Tail:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines = [*self.lines[-30:], line.rstrip()]


def _run(cmd: list[str], step: str, on_line: Callable[[str], None] | None) -> None:
    tail = _Tail()
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
        **{k: os.environ[k] for k in PROXY_VARS if k in os.environ},
    }
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
    except OSError as exc:
        raise BuildError(f"{step}: cannot start {cmd[0]} ({exc}); `make apt` installs it") from exc
    assert proc.stdout is not None
    for line in proc.stdout:
        tail.add(line)
        if on_line is not None:
            on_line(line.rstrip())
    if proc.wait() != 0:
        raise BuildError(f"{step} failed (exit {proc.returncode}):\n" + "\n".join(tail.lines))


def build_image(
    spec: ImageSpec,
    store: ImageStore | None = None,
    on_line: Callable[[str], None] | None = None,
) -> Image:
    """Build ``spec`` into the store (or return the stored image of the same id).

    Needs root (mmdebstrap's root mode, and pip in a chroot) and ``mmdebstrap`` on PATH.
    ``on_line`` receives the tools' output lines (progress).
    """
    store = store or ImageStore()
    image_id = spec.id
    if store.has(image_id):
        return store.get(image_id)
    if shutil.which("mmdebstrap") is None:
        raise BuildError("mmdebstrap is not installed (`make apt`, or apt-get install mmdebstrap)")
    if os.geteuid() != 0:
        raise BuildError("building images needs root (mmdebstrap --mode=root)")
    staging = store.staging()
    try:
        rootfs = os.path.join(staging, "rootfs")
        cmd = [
            "mmdebstrap",
            "--mode=root",
            f"--variant={spec.variant}",
            "--format=directory",
            "--skip=output/dev",
            # Reproducible metadata where dpkg honours it; apt's lists are not kept.
            "--aptopt=Acquire::Check-Valid-Until false",
            "--customize-hook=rm -rf $1/var/lib/apt/lists/* $1/var/cache/apt/*",
        ]
        if spec.packages:
            cmd.append("--include=" + ",".join(sorted(set(spec.packages))))
        cmd += [spec.suite, rootfs, spec.mirror]
        _run(cmd, "mmdebstrap", on_line)
        if spec.pip:
            _pip(rootfs, spec, on_line)
        # Set-uid bits stay: the programs are Debian's, the store is root's alone (0700),
        # and inside the sandbox they grant nothing (no_new_privs), as the security suite
        # checks. Imports (untrusted archives) lose theirs.
        _empty_dev(rootfs)
        config = {"spec": asdict(spec)}
        return store.commit(staging, image_id, spec.name, f"build:{spec.suite}", config)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _pip(rootfs: str, spec: ImageSpec, on_line: Callable[[str], None] | None) -> None:
    """Install ``spec.pip`` with the image's own pip, in a chroot of the image (its Python
    decides which wheels fit)."""
    if not os.path.exists(os.path.join(rootfs, "usr/bin/python3")):
        raise ValidationError("pip", "the image has no /usr/bin/python3 (add python3 to packages)")
    # The host's resolver and CA bundle (a proxy's CA the image does not know), for the
    # download only; placed and removed by descriptor, never through a link of the image.
    put_resolv = os.path.exists("/etc/resolv.conf") and _put(
        rootfs, "etc/resolv.conf", "/etc/resolv.conf"
    )
    cert: list[str] = []
    if os.path.isfile(HOST_CA) and _put(rootfs, "tmp/assay-build-ca.crt", HOST_CA):
        cert = ["--cert", "/tmp/assay-build-ca.crt"]
    cmd = [
        "chroot",
        rootfs,
        "/usr/bin/python3",
        "-m",
        "pip",
        "install",
        "--no-cache-dir",
        "--disable-pip-version-check",
        *(["--break-system-packages"] if _externally_managed(rootfs) else []),
        *cert,
        *spec.pip_args,
        *spec.pip,
    ]
    try:
        _run(cmd, "pip install", on_line)
    finally:
        if put_resolv:
            _drop(rootfs, "etc/resolv.conf")
        if cert:
            _drop(rootfs, "tmp/assay-build-ca.crt")


def _put(rootfs: str, rel: str, host_file: str) -> bool:
    """Copy ``host_file`` to ``rootfs/rel`` unless something is there; False if it was, or
    if ``rel``'s directory is missing or a link."""
    parent = open_dir_under(rootfs, rel.split("/")[:-1])
    if parent is None:
        return False
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(rel.rsplit("/", 1)[-1], flags, 0o644, dir_fd=parent)
    except FileExistsError:
        return False
    finally:
        os.close(parent)
    with os.fdopen(fd, "wb") as out, open(host_file, "rb") as src:
        shutil.copyfileobj(src, out)
    return True


def _drop(rootfs: str, rel: str) -> None:
    """Remove ``rootfs/rel`` (what :func:`_put` placed), reached without following a link:
    pip ran the image's code as root, which may have replaced its directory by one."""
    parent = open_dir_under(rootfs, rel.split("/")[:-1])
    if parent is not None:
        try:
            remove_at(parent, rel.rsplit("/", 1)[-1])
        finally:
            os.close(parent)


def _externally_managed(rootfs: str) -> bool:
    """Whether the image's Python refuses pip without ``--break-system-packages`` (PEP 668;
    older pips do not know the flag)."""
    lib = os.path.join(rootfs, "usr/lib")
    return any(
        os.path.exists(os.path.join(lib, d, "EXTERNALLY-MANAGED"))
        for d in os.listdir(lib)
        if re.fullmatch(r"python3\.\d+", d)
    )


def _empty_dev(rootfs: str) -> None:
    """No device nodes in the store: the sandbox mounts its own five harmless ones."""
    dev = os.path.join(rootfs, "dev")
    if os.path.isdir(dev) and not os.path.islink(dev):
        shutil.rmtree(dev)
    os.makedirs(dev, exist_ok=True)
