"""Image specs (parsing, validation, ids) and a real build from Debian packages."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _archives import PY39_SPEC

from assay.errors import ValidationError
from assay.images import Image, ImageSpec, build_image
from assay.images.build import BUILDER_VERSION


def test_same_spec_same_id_and_name_is_only_a_label(tmp_path: Path) -> None:
    a = ImageSpec(name="a", suite="bullseye", packages=("python3", "curl"))
    b = ImageSpec(name="b", suite="bullseye", packages=("curl", "python3", "curl"))
    assert a.id == b.id and len(a.id) == 64
    assert ImageSpec(name="a", suite="trixie", packages=("python3", "curl")).id != a.id
    assert ImageSpec(name="a", suite="bullseye", packages=("python3",), pip=("attrs",)).id != a.id
    toml = tmp_path / "spec.toml"
    toml.write_text('name = "a"\nsuite = "bullseye"\npackages = ["curl", "python3"]\n')
    assert ImageSpec.load(str(toml)).id == a.id
    js = tmp_path / "spec.json"
    js.write_text(json.dumps({"name": "a", "suite": "bullseye", "packages": ["python3", "curl"]}))
    assert ImageSpec.load(str(js)).id == a.id
    assert BUILDER_VERSION >= 1


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"suite": "bullseye"}, "name"),
        ({"name": "x"}, "suite"),
        ({"name": "x", "suite": "Bull Seye"}, "suite"),
        ({"name": "x", "suite": "bullseye", "packages": ["rm -rf /"]}, "packages"),
        ({"name": "x", "suite": "bullseye", "packages": "python3"}, "packages"),
        ({"name": "x", "suite": "bullseye", "pip": ["--index-url=http://evil"]}, "pip"),
        ({"name": "x", "suite": "bullseye", "variant": "huge"}, "variant"),
        ({"name": "x", "suite": "bullseye", "mirror": "ftp://x"}, "mirror"),
        ({"name": "x", "suite": "bullseye", "colour": "red"}, "colour"),
        ({"name": "../x", "suite": "bullseye"}, "name"),
    ],
)
def test_bad_specs_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        ImageSpec.from_dict(data)
    assert err.value.field == field


def test_unreadable_spec(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read"):
        ImageSpec.load(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ValidationError, match="does not parse"):
        ImageSpec.load(str(bad))


@pytest.mark.slow
def test_built_image_is_debian_and_rebuild_is_a_noop(py39_image: Image) -> None:
    root = Path(py39_image.path)
    assert py39_image.python == "3.9"
    assert py39_image.source == "build:bullseye"
    assert (root / "usr/bin/python3.9").exists()
    assert (root / "etc/debian_version").read_text().startswith("11")
    # No device nodes in the store: only the gVisor tier's mount point (made at commit; an
    # image stored before that has it from its first gVisor run, when runsc made it).
    assert set(os.listdir(root / "dev")) <= {".assay-uds"}
    # Debian's set-uid programs keep their bits (they grant nothing in the sandbox, which
    # the security suite checks in this image); the store is root's alone.
    setuid = [
        name
        for name in ("bin/su", "usr/bin/su", "bin/mount", "usr/bin/mount")
        if (root / name).is_file() and (root / name).stat().st_mode & 0o4000
    ]
    assert setuid
    assert os.stat(Path(py39_image.path).parents[1]).st_mode & 0o777 == 0o700
    again = build_image(PY39_SPEC)  # same spec: answered from the store at once
    assert again.id == py39_image.id == PY39_SPEC.id


def test_the_builders_own_files_never_go_through_a_link_of_the_image(tmp_path: Path) -> None:
    """pip runs the image's code as root: it may turn /tmp or /etc into links to the host.
    The resolver and CA the builder places, and removes afterwards, stay inside."""
    from assay.images.build import _drop, _put

    host = tmp_path / "host"
    host.mkdir()
    (host / "resolv.conf").write_text("host's own\n")
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    os.symlink(host, rootfs / "tmp")
    os.symlink(host, rootfs / "etc")
    source = tmp_path / "ca.crt"
    source.write_text("ca\n")
    assert _put(str(rootfs), "tmp/assay-build-ca.crt", str(source)) is False
    _drop(str(rootfs), "etc/resolv.conf")
    assert sorted(os.listdir(host)) == ["resolv.conf"]
    (rootfs / "tmp").unlink()
    (rootfs / "tmp").mkdir()
    assert _put(str(rootfs), "tmp/assay-build-ca.crt", str(source)) is True
    _drop(str(rootfs), "tmp/assay-build-ca.crt")
    assert os.listdir(rootfs / "tmp") == []
