"""``assay._fs.tree_size``: what the image store and the compile cache count as their size."""

from __future__ import annotations

import os
from pathlib import Path

from assay._fs import tree_size


def test_counts_every_file_below_the_root(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 100)
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "b").write_bytes(b"y" * 20)
    (tmp_path / "sub" / "deeper" / "c").write_bytes(b"z" * 3)
    assert tree_size(tmp_path) == 123
    assert tree_size(str(tmp_path / "sub")) == 23


def test_a_link_counts_as_itself_not_its_target(tmp_path: Path) -> None:
    big = tmp_path / "outside"
    big.write_bytes(b"x" * 10_000)
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(big, root / "link")
    assert tree_size(root) == len(os.fsencode(big))  # a symlink's size is its target's path


def test_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert tree_size(tmp_path / "nothing") == 0
