"""Importing an OCI image layout or a ``docker save`` archive into the store, in Python.

Both formats are a tar (or, for OCI, also a directory) holding a manifest and layer blobs:

- OCI layout: ``oci-layout``, ``index.json`` -> manifest (possibly through a nested index)
  -> ``layers[].digest`` -> ``blobs/sha256/<hex>``; every blob's digest is verified.
- docker save: ``manifest.json`` -> ``[0].Layers`` (paths inside the archive) and ``Config``.

Layers are applied in order with whiteouts (``_unpack``); nothing of the image runs. The
image id is the SHA-256 of the layers' own SHA-256 digests in order, so importing the same
archive twice stores it once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from .. import defaults
from .._fs import open_dir_under
from ..errors import ValidationError
from ._unpack import Budget, apply_layer, member_path, neutralise_links
from .store import Image, ImageStore

FIELD = "archive"
_MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
_INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
Progress = Callable[[int, int], None]


class _Source:
    """Files of the archive by name: a directory or a tar (members never extracted)."""

    def __init__(self, path: str, budget: Budget) -> None:
        self.path = path
        self.tar: tarfile.TarFile | None = None
        self.members: dict[str, tarfile.TarInfo] = {}
        if os.path.isdir(path):
            self.path = os.path.realpath(path)  # the user's choice; links inside it are not
            return
        try:
            self.tar = tarfile.open(path, "r:*")
        except (tarfile.TarError, OSError) as exc:
            raise ValidationError(FIELD, f"{path!r} is not a tar archive: {exc}") from None
        # The archive's own members count against the same cap as the layers they hold
        # (a compressed archive of a huge blob is a bomb before any layer is read).
        outer = Budget(budget.max_bytes, budget.max_entries)
        for m in self.tar:
            outer.take(FIELD, m)
            self.members[member_path(FIELD, m.name)] = m

    def _plain(self, rel: str) -> int | None:
        """A descriptor of the layout directory's regular file ``rel``, reached without
        following a link (a layout is as untrusted as a tar: ``blobs -> /root`` would have
        root read host files into the image), or None."""
        parts = rel.split("/")
        parent = open_dir_under(self.path, parts[:-1])
        if parent is None:
            return None
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError:
            return None
        finally:
            os.close(parent)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return fd

    def exists(self, name: str) -> bool:
        if self.tar is None:
            fd = self._plain(member_path(FIELD, name))
            if fd is not None:
                os.close(fd)
            return fd is not None
        m = self.members.get(member_path(FIELD, name))
        return m is not None and m.isreg()

    @contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        rel = member_path(FIELD, name)
        if self.tar is None:
            fd = self._plain(rel)
            if fd is None:
                raise ValidationError(FIELD, f"the image has no file {name!r}")
            with os.fdopen(fd, "rb") as plain:
                yield plain
            return
        m = self.members.get(rel)
        member = self.tar.extractfile(m) if m is not None and m.isreg() else None
        if member is None:
            raise ValidationError(FIELD, f"the archive has no file {name!r}")
        with member:
            yield member

    def json(self, name: str) -> Any:
        with self.open(name) as fh:
            try:
                return json.loads(fh.read(16 << 20))
            except ValueError as exc:
                raise ValidationError(FIELD, f"{name} is not JSON: {exc}") from None

    def close(self) -> None:
        if self.tar is not None:
            self.tar.close()


def _blob(digest: Any) -> str:
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        raise ValidationError(FIELD, f"unsupported blob digest {digest!r}")
    hexpart = digest[len("sha256:") :]
    if len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
        raise ValidationError(FIELD, f"malformed blob digest {digest!r}")
    return "blobs/sha256/" + hexpart


def _oci_layers(src: _Source) -> tuple[list[tuple[str, str | None]], dict[str, Any]]:
    index = src.json("index.json")
    for _ in range(4):  # an index may name another index (multi-platform images)
        manifests = index.get("manifests") if isinstance(index, dict) else None
        if not manifests:
            raise ValidationError(FIELD, "index.json names no manifest")
        chosen = next(
            (
                m
                for m in manifests
                if (m.get("platform") or {}).get("architecture", "amd64") == "amd64"
            ),
            manifests[0],
        )
        doc = src.json(_blob(chosen.get("digest")))
        if chosen.get("mediaType") in _INDEX_TYPES or doc.get("mediaType") in _INDEX_TYPES:
            index = doc
            continue
        break
    else:
        raise ValidationError(FIELD, "index.json nests indexes too deeply")
    if doc.get("mediaType", _MANIFEST_TYPES[0]) not in _MANIFEST_TYPES:
        raise ValidationError(FIELD, f"unsupported manifest type {doc.get('mediaType')!r}")
    config: dict[str, Any] = {}
    if isinstance(doc.get("config"), dict):
        with_config = src.json(_blob(doc["config"].get("digest")))
        config = with_config.get("config") or {}
    layers = [(_blob(layer.get("digest")), layer.get("digest")) for layer in doc.get("layers", [])]
    return layers, config


def _docker_layers(src: _Source) -> tuple[list[tuple[str, str | None]], dict[str, Any]]:
    manifest = src.json("manifest.json")
    if not isinstance(manifest, list) or not manifest or not isinstance(manifest[0], dict):
        raise ValidationError(FIELD, "manifest.json lists no image")
    entry = manifest[0]
    config: dict[str, Any] = {}
    if isinstance(entry.get("Config"), str) and src.exists(entry["Config"]):
        config = src.json(entry["Config"]).get("config") or {}
    layers = entry.get("Layers")
    if not isinstance(layers, list) or not all(isinstance(x, str) for x in layers):
        raise ValidationError(FIELD, "manifest.json: Layers must be a list of paths")
    return [(name, None) for name in layers], config


def _digest(fh: IO[bytes]) -> str:
    h = hashlib.sha256()
    while chunk := fh.read(1 << 20):
        h.update(chunk)
    return "sha256:" + h.hexdigest()


def import_image(
    path: str,
    store: ImageStore | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    max_bytes: int = defaults.IMAGE_MAX_BYTES,
    max_entries: int = defaults.IMAGE_MAX_ENTRIES,
) -> Image:
    """Import the OCI layout (directory or tar) or ``docker save`` archive at ``path``.

    Raises :class:`ValidationError` (field ``archive``) for anything unsafe or malformed:
    absolute or ``..`` member names, device nodes, links leaving the image, digest
    mismatches, an image expanding past ``max_bytes`` of file data or ``max_entries``
    entries (all layers together; nothing is left in the store). ``progress(done, total)``
    is called per layer.
    """
    store = store or ImageStore()
    if not os.path.exists(path):
        raise ValidationError(FIELD, f"{path!r} does not exist")
    budget = Budget(max_bytes, max_entries)
    src = _Source(path, budget)
    try:
        if src.exists("index.json"):
            layers, config = _oci_layers(src)
        elif src.exists("manifest.json"):
            layers, config = _docker_layers(src)
        else:
            raise ValidationError(
                FIELD, f"{path!r} is neither an OCI layout (index.json) nor a docker save archive"
            )
        if not layers:
            raise ValidationError(FIELD, "the image has no layers")
        digests = []
        for layer, expected in layers:
            with src.open(layer) as fh:
                got = _digest(fh)
            if expected is not None and got != expected:
                raise ValidationError(FIELD, f"layer {layer} has digest {got}, not {expected}")
            digests.append(got)
        image_id = hashlib.sha256("\n".join(digests).encode()).hexdigest()
        if store.has(image_id):
            return store.get(image_id)
        staging = store.staging()
        try:
            rootfs = os.path.join(staging, "rootfs")
            os.mkdir(rootfs, 0o755)
            for done, (layer, _expected) in enumerate(layers):
                with src.open(layer) as fh:
                    apply_layer(FIELD, rootfs, fh, budget)
                if progress is not None:
                    progress(done + 1, len(layers))
            # What the sandbox binds from an image never leads into /proc, /dev or /sys.
            binds = [*defaults.RO_BINDS, *(f"/etc/{n}" for n in defaults.ETC_BINDS)]
            neutralise_links(rootfs, binds)
            kept: dict[str, Any] = {
                k: config[k] for k in ("Env", "WorkingDir", "Cmd", "Entrypoint") if k in config
            }
            label = name or os.path.basename(os.path.normpath(path)).split(".")[0] or "imported"
            return store.commit(staging, image_id, label, f"import:{os.path.basename(path)}", kept)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        src.close()
