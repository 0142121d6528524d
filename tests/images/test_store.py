"""The image store: lookup by id, prefix and name; removal; unknown images."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _archives import layer_tar, oci_archive

from assay.errors import ValidationError
from assay.images import ImageNotFound, ImageStore, import_image
from assay.images.store import python_version


def _image(tmp_path: Path, store: ImageStore, name: str, payload: bytes) -> str:
    archive = oci_archive(tmp_path / f"{name}.tar", [layer_tar([("f", "file", payload)])])
    return import_image(str(archive), store, name=name).id


def test_lookup_by_id_prefix_and_name(tmp_path: Path, store: ImageStore) -> None:
    a = _image(tmp_path, store, "alpha", b"1")
    b = _image(tmp_path, store, "beta", b"2")
    assert store.get(a).id == a
    assert store.get("sha256:" + a).id == a
    assert store.get(a[:12]).id == a
    assert store.get("beta").id == b
    assert [i.name for i in store.list()] == ["alpha", "beta"]
    assert store.get("alpha").path == str(store.root / a / "rootfs")


def test_unknown_image_names_the_field(store: ImageStore) -> None:
    with pytest.raises(ImageNotFound) as err:
        store.get("nope")
    assert err.value.field == "image" and "nope" in str(err.value)
    assert isinstance(err.value, ValidationError)
    with pytest.raises(ValidationError, match="image"):
        store.get("")


def test_remove(tmp_path: Path, store: ImageStore) -> None:
    a = _image(tmp_path, store, "alpha", b"1")
    assert store.remove("alpha").id == a
    assert store.list() == []
    assert not (store.root / a).exists()
    with pytest.raises(ImageNotFound):
        store.remove("alpha")


def test_store_directory_is_private(tmp_path: Path, store: ImageStore) -> None:
    _image(tmp_path, store, "alpha", b"1")
    assert os.stat(store.root).st_mode & 0o777 == 0o700


def test_python_version_read_without_running_anything(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/lib/python3.9").mkdir(parents=True)
    assert python_version(str(root)) is None
    (root / "usr/bin/python3").symlink_to("python3.9")
    assert python_version(str(root)) == "3.9"
    (root / "usr/bin/python3").unlink()
    (root / "usr/bin/python3").write_bytes(b"\x7fELF")
    assert python_version(str(root)) == "3.9"
