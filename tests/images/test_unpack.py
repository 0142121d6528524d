"""Layers that try to make the importer (root) act on the host through a link, duplicate
names, hard links out of the root, and decompression bombs."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from _archives import docker_archive, layer_tar, oci_archive

from assay.errors import ValidationError
from assay.images import ImageStore, import_image

Layer = list[tuple[str, str, bytes | str | int]]


def _state(path: Path) -> tuple[int, int, int, int, bytes | list[str]]:
    st = os.lstat(path)
    body = sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()
    return (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, body)


@pytest.fixture(params=["file", "dir"])
def host_target(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A host file or directory outside the image root, mode 0600/0700, a fixed mtime."""
    target = tmp_path / "host" / "secret"
    target.parent.mkdir()
    if request.param == "dir":
        target.mkdir(0o700)
        (target / "inside").write_bytes(b"host")
    else:
        target.write_bytes(b"host secret\n")
        target.chmod(0o600)
    os.utime(target, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    return target


def _import(tmp_path: Path, store: ImageStore, layers: list[Layer]) -> Path:
    archive = oci_archive(tmp_path / "img.tar", [layer_tar(layer) for layer in layers])
    return Path(import_image(str(archive), store).path)


#: (layers, what x is in the image: "symlink", or the mode of the directory it became)
CASES: dict[str, tuple[list[Layer], str | int]] = {
    # one layer: a directory x (mode 0777), then a symlink x to the host path
    "dir-then-symlink": ([[("x", "dir", 0o777), ("x", "symlink", "TARGET")]], "symlink"),
    # one layer: the symlink first, then the directory
    "symlink-then-dir": (
        [[("x", "symlink", "TARGET"), ("x", "dir", 0o777), ("x/f", "file", b"mine")]],
        0o777,
    ),
    # across layers, both ways
    "dir-then-symlink-across-layers": (
        [[("x", "dir", 0o777)], [("x", "symlink", "TARGET")]],
        "symlink",
    ),
    "symlink-then-dir-across-layers": (
        [[("x", "symlink", "TARGET")], [("x", "dir", 0o777), ("x/f", "file", b"mine")]],
        0o777,
    ),
    # members beneath the lower layer's symlink: it becomes a directory of the image
    "beneath-lower-symlink": (
        [[("x", "symlink", "TARGET")], [("x/sub", "dir", 0o777), ("x/f", "file", b"mine")]],
        0o755,
    ),
    # a file named as the lower layer's symlink: replaces it, never written through it
    "file-over-lower-symlink": ([[("x", "symlink", "TARGET")], [("x", "file", b"mine")]], "file"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_planted_symlink_never_leads_the_importer_to_the_host(
    tmp_path: Path, store: ImageStore, host_target: Path, case: str
) -> None:
    layers, becomes = CASES[case]
    before = _state(host_target)
    planted = [
        [(n, k, str(host_target) if p == "TARGET" else p) for n, k, p in layer] for layer in layers
    ]
    root = _import(tmp_path, store, planted)
    assert _state(host_target) == before
    x = root / "x"
    if becomes == "symlink":
        assert os.readlink(x) == str(host_target)
    elif becomes == "file":
        assert x.read_bytes() == b"mine" and not x.is_symlink()
    else:
        assert (x.is_dir(), x.is_symlink(), x.stat().st_mode & 0o7777) == (True, False, becomes)


def test_a_later_member_replaces_an_earlier_one_before_anything_is_written(
    tmp_path: Path, store: ImageStore, host_target: Path
) -> None:
    root = _import(
        tmp_path,
        store,
        [
            [
                ("f", "file", b"first"),
                ("f", "file", b"second"),
                ("d/a", "file", b"a"),
                ("d", "symlink", str(host_target)),  # replaces d and what was in it
            ]
        ],
    )
    assert (root / "f").read_bytes() == b"second"
    assert os.readlink(root / "d") == str(host_target)
    assert sorted(os.listdir(root)) == ["d", "dev", "etc", "f", "proc", "tmp", "work"]


def test_a_member_beneath_a_symlink_of_its_own_layer_is_refused(
    tmp_path: Path, store: ImageStore, host_target: Path
) -> None:
    before = _state(host_target)
    with pytest.raises(ValidationError, match="beneath 'x'"):
        _import(tmp_path, store, [[("x", "symlink", str(host_target)), ("x/f", "file", b"y")]])
    assert _state(host_target) == before
    assert list(store.root.iterdir()) == []


def test_a_hard_link_cannot_reach_a_host_file(
    tmp_path: Path, store: ImageStore, host_target: Path
) -> None:
    before = _state(host_target)
    for layers in (
        [[("l", "symlink", str(host_target)), ("h", "hardlink", "l")]],
        [[("l", "symlink", str(host_target.parent))], [("h", "hardlink", "l/secret")]],
    ):
        with pytest.raises(ValidationError, match="not a file of the image"):
            _import(tmp_path, store, layers)
    assert _state(host_target) == before
    assert os.lstat(host_target).st_nlink == (2 if host_target.is_dir() else 1)


def _bomb(size: int) -> bytes:
    """A gzip layer holding ``size`` bytes of zeros (a thousandth of that, compressed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = size
        tar.addfile(info, io.BytesIO(bytes(size)))
    return buf.getvalue()


def test_a_decompression_bomb_is_refused_and_nothing_is_left(
    tmp_path: Path, store: ImageStore
) -> None:
    bomb = _bomb(48 << 20)
    assert len(bomb) < 1 << 20  # small archive, large expansion
    first = layer_tar([("etc/motd", "file", b"hello\n")])
    for make in (oci_archive, docker_archive):
        archive = make(tmp_path / f"bomb-{make.__name__}.tar", [first, bomb])
        with pytest.raises(ValidationError, match=f"cap of {16 << 20} bytes") as err:
            import_image(str(archive), store, max_bytes=16 << 20)
        assert err.value.field == "archive"
        assert list(store.root.iterdir()) == []  # the half-made image is gone
    fine = import_image(str(archive), store, max_bytes=64 << 20)
    assert (Path(fine.path) / "zeros").stat().st_size == 48 << 20


def test_too_many_entries_are_refused(tmp_path: Path, store: ImageStore) -> None:
    many = layer_tar([(f"f{i}", "file", b"") for i in range(50)])
    with pytest.raises(ValidationError, match="cap of 20 entries"):
        import_image(str(oci_archive(tmp_path / "m.tar", [many])), store, max_entries=20)
    assert list(store.root.iterdir()) == []


def test_links_the_sandbox_would_bind_into_proc_or_dev_are_removed(
    tmp_path: Path, store: ImageStore
) -> None:
    planted: Layer = [
        ("usr/share/zoneinfo/UTC", "file", b"TZif"),
        ("usr/lib/x", "file", b"x"),
        ("etc/alternatives", "symlink", "/dev"),
        ("etc/java-17-openjdk", "symlink", "../../proc"),
        ("etc/ld.so.conf.d", "symlink", "/proc/1/root/etc"),
        ("etc/ssl", "symlink", "loop"),
        ("etc/loop", "symlink", "ssl"),
        ("etc/localtime", "symlink", "/usr/share/zoneinfo/UTC"),  # within: kept
        ("sbin", "symlink", "/sys/kernel"),
        ("lib", "symlink", "usr/lib"),  # merged /usr: kept
        ("etc/mime.types", "symlink", "/etc/../../dev/../usr/lib/x"),  # within: kept
    ]
    root = _import(tmp_path, store, [planted])
    gone = ("etc/alternatives", "etc/java-17-openjdk", "etc/ld.so.conf.d", "etc/ssl", "sbin")
    assert [p for p in gone if os.path.lexists(root / p)] == []
    assert os.readlink(root / "etc/localtime") == "/usr/share/zoneinfo/UTC"
    assert os.readlink(root / "lib") == "usr/lib"
    assert os.readlink(root / "etc/mime.types") == "/etc/../../dev/../usr/lib/x"


def test_the_python_version_is_the_images_not_read_through_a_link(
    tmp_path: Path, store: ImageStore
) -> None:
    image = import_image(
        str(
            oci_archive(
                tmp_path / "p.tar",
                [
                    layer_tar(
                        [("usr/bin/python3", "file", b"ELF"), ("usr/lib", "symlink", "/usr/lib")]
                    )
                ],
            )
        ),
        store,
    )
    assert image.python is None  # not the host's /usr/lib/python3.x


def test_a_layout_directory_is_read_without_following_its_links(
    tmp_path: Path, store: ImageStore
) -> None:
    archive = oci_archive(tmp_path / "img.tar", [layer_tar([("etc/motd", "file", b"hi\n")])])
    layout = tmp_path / "layout"
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="data")
    elsewhere = tmp_path / "elsewhere"
    (layout / "blobs").rename(elsewhere)
    os.symlink(elsewhere, layout / "blobs")  # e.g. a link to a host directory
    with pytest.raises(ValidationError, match="has no file"):
        import_image(str(layout), store)
    os.symlink(layout, tmp_path / "chosen")  # the path the user names may be a link
    (layout / "blobs").unlink()
    elsewhere.rename(layout / "blobs")
    image = import_image(str(tmp_path / "chosen"), store)
    assert (Path(image.path) / "etc/motd").read_bytes() == b"hi\n"
