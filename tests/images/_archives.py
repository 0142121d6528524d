"""Archives the tests assemble themselves: tar layers, OCI image layouts, ``docker save``
archives (nothing is downloaded from a container registry)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterable
from pathlib import Path

from assay.images import ImageSpec

#: The test image: a Debian release whose Python (3.9) differs from the host's (Debian 12:
#: 3.11). Built once per machine (the store is content-addressed by spec).
PY39_SPEC = ImageSpec(name="test-py39", suite="bullseye", packages=("python3",))

Entry = tuple[str, str, bytes | str | int]  # (name, kind, payload)


def layer_tar(entries: Iterable[Entry], gz: bool = False) -> bytes:
    """A layer from ``(name, kind, payload)``: kind ``file`` (bytes), ``dir`` (mode), ``symlink``
    (target), ``hardlink`` (target), ``chr`` (device), ``setuid`` (bytes, mode 4755)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            data = b""
            if kind in ("file", "setuid"):
                data = payload if isinstance(payload, bytes) else str(payload).encode()
                info.size = len(data)
                info.mode = 0o4755 if kind == "setuid" else 0o644
            elif kind == "dir":  # payload: its mode (0: 0755)
                info.type, info.mode = tarfile.DIRTYPE, int(payload or 0o755)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, str(payload)
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, str(payload)
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def oci_archive(path: Path, layers: list[bytes], config: dict | None = None) -> Path:
    """An OCI image layout as a tar at ``path``."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest

    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": config or {}}).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"digest": blob(cfg), "size": len(cfg)},
            "layers": [{"digest": blob(layer), "size": len(layer)} for layer in layers],
        }
    ).encode()
    index = {"schemaVersion": 2, "manifests": [{"digest": blob(manifest), "size": len(manifest)}]}
    with tarfile.open(path, "w") as tar:
        _add(tar, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        _add(tar, "index.json", json.dumps(index).encode())
        for digest, data in blobs.items():
            _add(tar, "blobs/sha256/" + digest.split(":")[1], data)
    return path


def docker_archive(path: Path, layers: list[bytes]) -> Path:
    """A ``docker save`` archive at ``path``."""
    names = [f"{i:02d}/layer.tar" for i in range(len(layers))]
    manifest = [{"Config": "config.json", "RepoTags": ["t:1"], "Layers": names}]
    with tarfile.open(path, "w") as tar:
        _add(tar, "manifest.json", json.dumps(manifest).encode())
        _add(tar, "config.json", json.dumps({"config": {"Env": ["PATH=/usr/bin"]}}).encode())
        for name, data in zip(names, layers, strict=True):
            _add(tar, name, data)
    return path


def rootfs_layer(rootfs: str, out: Path) -> Path:
    """A layer holding a whole root file system (as ``docker export`` would make it)."""
    with tarfile.open(out, "w") as tar:
        for entry in sorted(os.listdir(rootfs)):
            tar.add(os.path.join(rootfs, entry), arcname=entry)
    return out
