"""The image store: read-only root file systems, stored once each, content-addressed.

Layout under ``<state dir>/images`` (mode 0700: only the supervisor's user walks it)::

    <id>/rootfs/      the root file system (never written after it is complete)
    <id>/image.json   what it is: id, name, source, size, Python version, config

An image's id is a SHA-256: of its layers' digests in order for an imported archive (the
same archive imports to the same id), of its canonical spec for a built one (the same spec
builds to the same id, and building it again is a no-op). An image enters the store by an
atomic rename of a complete directory, so a reader never sees half an image.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import defaults
from .._fs import open_dir_under, tree_size
from ..errors import AssayError, ImageNotFound, ValidationError

#: Directories every image root gets (mount points of the sandbox's own file systems, and
#: of the gVisor tier's relay sockets: runsc creates a missing mount point in the root it is
#: given, which would be the stored image itself).
MOUNT_POINTS = ("proc", "dev", "dev/.assay-uds", "tmp", "work", "etc")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
_ID = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Image:
    """One stored image."""

    id: str
    name: str
    source: str  # "import:<file name>" or "build:<suite>"
    created: float
    size_bytes: int
    python: str | None  # the image's /usr/bin/python3 version, if it has one
    config: dict[str, Any] = field(default_factory=dict)
    path: str = ""  # the rootfs directory

    @property
    def short_id(self) -> str:
        return self.id[:12]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("path")
        return data


def images_dir() -> Path:
    """``$ASSAY_IMAGES_DIR`` or ``<state dir>/images``."""
    env = os.environ.get("ASSAY_IMAGES_DIR")
    return Path(env) if env else defaults.state_dir() / "images"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValidationError(
            "name", f"{name!r} is not an image name (letters, digits, . _ : / -; at most 128)"
        )
    return name


def python_version(rootfs: str) -> str | None:
    """The version of the image's ``/usr/bin/python3`` (from the file names of its standard
    library; nothing of the image is executed)."""
    target = os.path.join(rootfs, "usr/bin/python3")
    if not os.path.lexists(target):
        return None
    link = os.readlink(target) if os.path.islink(target) else ""
    m = re.search(r"python(3\.\d+)$", link)
    if m:
        return m.group(1)
    # The image's own usr/lib, reached without following a link (an imported image is
    # untrusted: its usr/lib may be a link to the host's).
    lib = open_dir_under(rootfs, ["usr", "lib"])
    if lib is None:
        return None
    try:
        libs = sorted(d for d in os.listdir(lib) if re.fullmatch(r"python3\.\d+", d))
    finally:
        os.close(lib)
    return libs[-1][len("python") :] if libs else None


class ImageStore:
    """The images of one state directory (thread-safe; several processes may share it)."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else images_dir()
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)

    def list(self) -> list[Image]:
        if not self.root.is_dir():
            return []
        found = []
        for entry in sorted(self.root.iterdir()):
            if _ID.match(entry.name) and (entry / "image.json").is_file():
                found.append(self._load(entry.name))
        return sorted(found, key=lambda i: i.created)

    def _load(self, image_id: str) -> Image:
        data = json.loads((self.root / image_id / "image.json").read_text())
        data["path"] = str(self.root / image_id / "rootfs")
        return Image(**data)

    def get(self, ref: str) -> Image:
        """The image named by a full id, a unique id prefix (at least 4 hex digits,
        optionally ``sha256:``), or a name (the newest image of that name)."""
        if not isinstance(ref, str) or not ref:
            raise ValidationError("image", "must be a non-empty image id or name")
        key = ref.removeprefix("sha256:")
        if _ID.match(key) and (self.root / key / "image.json").is_file():
            return self._load(key)
        images = self.list()
        if re.fullmatch(r"[0-9a-f]{4,63}", key):
            hits = [i for i in images if i.id.startswith(key)]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise ValidationError("image", f"id prefix {ref!r} names {len(hits)} images")
        named = [i for i in images if i.name == ref]
        if named:
            return named[-1]
        raise ImageNotFound(ref)

    def has(self, image_id: str) -> bool:
        return (self.root / image_id / "image.json").is_file()

    def staging(self) -> str:
        """A fresh directory on the store's file system to assemble an image in."""
        self._ensure()
        return tempfile.mkdtemp(prefix=".staging-", dir=self.root)

    def commit(
        self, staging: str, image_id: str, name: str, source: str, config: dict[str, Any]
    ) -> Image:
        """Turn ``staging`` (holding ``rootfs/``) into image ``image_id``; if the store has
        it already, ``staging`` is dropped and the stored image returned (its name kept)."""
        rootfs = os.path.join(staging, "rootfs")
        for d in MOUNT_POINTS:
            path = os.path.join(rootfs, d)
            if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
                os.unlink(path)
            os.makedirs(path, exist_ok=True)
        image = Image(
            id=image_id,
            name=check_name(name),
            source=source,
            created=time.time(),
            size_bytes=tree_size(rootfs),
            python=python_version(rootfs),
            config=config,
        )
        with open(os.path.join(staging, "image.json"), "w") as fh:
            json.dump(image.to_json(), fh, indent=1, sort_keys=True)
        os.chmod(staging, 0o755)
        os.chmod(rootfs, 0o755)
        with self._lock:
            if self.has(image_id):
                shutil.rmtree(staging, ignore_errors=True)
                return self._load(image_id)
            try:
                os.rename(staging, self.root / image_id)
            except OSError:  # another process committed the same id first
                shutil.rmtree(staging, ignore_errors=True)
                if not self.has(image_id):
                    raise
        return self._load(image_id)

    def remove(self, ref: str) -> Image:
        """Delete an image (runs already holding it keep their view until they end)."""
        image = self.get(ref)
        trash = self.root / f".trash-{image.id}-{os.getpid()}"
        try:
            os.rename(self.root / image.id, trash)
        except OSError as exc:
            raise AssayError(f"cannot remove image {image.short_id}: {exc}") from exc
        shutil.rmtree(trash, ignore_errors=True)
        return image
