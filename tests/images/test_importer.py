"""Importing OCI layouts and docker-save archives: layers, whiteouts, and hostile archives."""

from __future__ import annotations

import os
import stat
import tarfile
from pathlib import Path

import pytest
from _archives import docker_archive, layer_tar, oci_archive

from assay.errors import ValidationError
from assay.images import ImageStore, import_image

BASE = [
    ("etc", "dir", 0),
    ("etc/motd", "file", b"hello\n"),
    ("usr/bin/tool", "file", b"#!/bin/sh\n"),
    ("usr/bin/other", "file", b"x"),
    ("opt/data/a", "file", b"a"),
    ("opt/data/b", "file", b"b"),
    ("bin", "symlink", "usr/bin"),
]


def test_oci_layers_apply_in_order_with_whiteouts(tmp_path: Path, store: ImageStore) -> None:
    top = layer_tar(
        [
            ("usr/bin/.wh.tool", "file", b""),  # deletes the lower layer's tool
            ("opt/data/.wh..wh..opq", "file", b""),  # empties opt/data of lower entries
            ("opt/data/c", "file", b"c"),
            ("etc/motd", "file", b"replaced\n"),
        ],
        gz=True,
    )
    archive = oci_archive(tmp_path / "img.tar", [layer_tar(BASE), top], {"Env": ["A=1"]})
    image = import_image(str(archive), store, name="demo")
    root = Path(image.path)
    assert not (root / "usr/bin/tool").exists()
    assert (root / "usr/bin/other").read_bytes() == b"x"
    assert sorted(os.listdir(root / "opt/data")) == ["c"]
    assert (root / "etc/motd").read_text() == "replaced\n"
    assert os.readlink(root / "bin") == "usr/bin"
    assert not any(n.startswith(".wh.") for _d, _s, files in os.walk(root) for n in files)
    for d in ("proc", "dev", "tmp", "work"):
        assert (root / d).is_dir()
    assert image.config == {"Env": ["A=1"]}
    assert store.get("demo").id == image.id


def test_same_archive_same_id_stored_once(tmp_path: Path, store: ImageStore) -> None:
    archive = oci_archive(tmp_path / "img.tar", [layer_tar(BASE)])
    first = import_image(str(archive), store)
    again = import_image(str(archive), store)
    assert first.id == again.id and len(first.id) == 64
    assert len(store.list()) == 1
    other = oci_archive(tmp_path / "other.tar", [layer_tar([*BASE, ("x", "file", b"1")])])
    assert import_image(str(other), store).id != first.id


def test_oci_layout_directory(tmp_path: Path, store: ImageStore) -> None:
    archive = oci_archive(tmp_path / "img.tar", [layer_tar(BASE)])
    layout = tmp_path / "layout"
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="data")
    image = import_image(str(layout), store)
    assert (Path(image.path) / "etc/motd").read_bytes() == b"hello\n"


def test_docker_save_archive(tmp_path: Path, store: ImageStore) -> None:
    top = layer_tar([("etc/.wh.motd", "file", b""), ("etc/issue", "file", b"debian\n")])
    archive = docker_archive(tmp_path / "saved.tar", [layer_tar(BASE), top])
    image = import_image(str(archive), store, name="saved")
    root = Path(image.path)
    assert not (root / "etc/motd").exists()
    assert (root / "etc/issue").read_text() == "debian\n"
    assert image.config == {"Env": ["PATH=/usr/bin"]}


@pytest.mark.parametrize(
    ("entries", "words"),
    [
        ([("/etc/passwd", "file", b"x")], "absolute"),
        ([("../escape", "file", b"x")], "'..'"),
        ([("usr/../../escape", "file", b"x")], "'..'"),
        ([("dev/null", "chr", 0)], "device node"),
        ([("etc/shadow", "hardlink", "/etc/shadow")], "absolute"),
        ([("etc/shadow", "hardlink", "../../etc/shadow")], "'..'"),
    ],
)
def test_hostile_members_are_refused(
    tmp_path: Path, store: ImageStore, entries: list, words: str
) -> None:
    for make in (oci_archive, docker_archive):
        archive = make(tmp_path / f"bad-{make.__name__}.tar", [layer_tar(entries)])
        with pytest.raises(ValidationError, match=words) as err:
            import_image(str(archive), store)
        assert err.value.field == "archive"
    assert store.list() == []
    assert not [p for p in store.root.iterdir() if p.name.startswith(".staging")]


def test_symlink_planted_by_a_lower_layer_is_not_followed(
    tmp_path: Path, store: ImageStore
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    lower = layer_tar([("evil", "symlink", str(outside))])
    upper = layer_tar([("evil/pwned", "file", b"owned")])
    image = import_image(str(oci_archive(tmp_path / "a.tar", [lower, upper])), store)
    assert list(outside.iterdir()) == []
    assert (Path(image.path) / "evil/pwned").read_bytes() == b"owned"
    # A hard link may only name a regular file already in the image, never via a symlink.
    sneaky = layer_tar([("lnk", "symlink", "/etc"), ("h", "hardlink", "lnk/passwd")])
    with pytest.raises(ValidationError, match="not a file of the image"):
        import_image(str(oci_archive(tmp_path / "b.tar", [sneaky])), store)


def test_setuid_bits_are_dropped(tmp_path: Path, store: ImageStore) -> None:
    image = import_image(
        str(oci_archive(tmp_path / "s.tar", [layer_tar([("su", "setuid", b"x")])])), store
    )
    mode = os.stat(Path(image.path) / "su").st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID)
    assert mode & 0o777 == 0o755


def test_digest_mismatch_and_garbage_are_refused(tmp_path: Path, store: ImageStore) -> None:
    archive = oci_archive(tmp_path / "img.tar", [layer_tar(BASE)])
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "layout", filter="data")
    blobs = sorted((tmp_path / "layout/blobs/sha256").iterdir(), key=lambda p: p.stat().st_size)
    blobs[-1].write_bytes(blobs[-1].read_bytes() + b"\0" * 1024)  # the layer, tampered
    with pytest.raises(ValidationError, match="digest"):
        import_image(str(tmp_path / "layout"), store)
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"not a tar at all")
    with pytest.raises(ValidationError, match="not a tar"):
        import_image(str(junk), store)
    with pytest.raises(ValidationError, match="does not exist"):
        import_image(str(tmp_path / "missing.tar"), store)
