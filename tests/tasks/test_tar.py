"""The fast tar reader agrees with ``tarfile`` on what workspaces come back as, and hands
anything else back to it."""

from __future__ import annotations

import io
import tarfile

from assay.tasks._tar import read_tree
from assay.tasks.types import tar_of, tree_from_tar


def _tree() -> tuple[dict[str, bytes], dict[str, str]]:
    files = {f"src/p/m{i}.py": b"X = %d\n" % i for i in range(50)}
    files["a/" + "x" * 150 + "/\u00e9.py"] = b"a long, non-ASCII name"
    files["big.bin"] = bytes(range(256)) * 40
    links = {"l/ink": "../src", "b/" + "y" * 120: "t" * 130}
    return files, links


def test_same_tree_as_tarfile() -> None:
    files, links = _tree()
    data = tar_of(files, links)
    fast = read_tree(data)
    assert fast is not None
    assert (dict(fast[0]), dict(fast[1])) == (files, links)
    assert tree_from_tar(data) == (files, links)


def test_a_workspace_tar_with_directories() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("d")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        info = tarfile.TarInfo("d/f.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    assert read_tree(buf.getvalue()) == ([("d/f.txt", b"hi")], [])


def test_gzip_and_truncated_tars_go_to_tarfile() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    assert read_tree(buf.getvalue()) is None
    assert tree_from_tar(buf.getvalue()) == ({"a.txt": b"hi"}, {})
    assert read_tree(tar_of({"a.txt": b"hi"})[:512]) is None


def test_pax_ownership_headers_of_sandbox_uids() -> None:
    """The session's tar: every member has a pax header (its uid does not fit ustar)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size, info.uid, info.gid, info.mtime = 2, 1880000000, 1880000000, 1.5
        tar.addfile(info, io.BytesIO(b"hi"))
    assert read_tree(buf.getvalue()) == ([("a.txt", b"hi")], [])
