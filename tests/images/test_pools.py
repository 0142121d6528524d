"""Warm pools per image: bounded, least recently used evicted, never one in use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _archives import layer_tar, oci_archive

from assay.images import ImageNotFound, ImagePools, ImageStore, import_image
from assay.sandbox import SandboxConfig


class FakeRunner:
    def __init__(self, config: SandboxConfig, pool_size: int) -> None:
        self.config = config
        self.pool_size = pool_size
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _pools(store: ImageStore, made: list[FakeRunner], max_images: int) -> ImagePools:
    def make(config: SandboxConfig, pool_size: int, _cache: Any) -> Any:
        made.append(FakeRunner(config, pool_size))
        return made[-1]

    return ImagePools(SandboxConfig(), make, store, max_images=max_images, pool_size=2)


def _images(tmp_path: Path, store: ImageStore, n: int) -> list[str]:
    return [
        import_image(
            str(oci_archive(tmp_path / f"{i}.tar", [layer_tar([("f", "file", b"%d" % i)])])),
            store,
            name=f"img{i}",
        ).id
        for i in range(n)
    ]


def test_one_pool_per_image_rooted_at_it(tmp_path: Path, store: ImageStore) -> None:
    ids = _images(tmp_path, store, 2)
    made: list[FakeRunner] = []
    pools = _pools(store, made, 4)
    with pools.use("img0") as a, pools.use(ids[0][:10]) as again, pools.use("img1") as b:
        assert a is again and a is not b
    assert len(made) == 2
    first = made[0]
    assert first.config.image_root == store.get("img0").path
    assert first.config.python == "/usr/bin/python3" and first.pool_size == 2
    pools.close()
    assert all(r.closed for r in made)


def test_least_recently_used_is_evicted_but_not_while_in_use(
    tmp_path: Path, store: ImageStore
) -> None:
    ids = _images(tmp_path, store, 3)
    made: list[FakeRunner] = []
    pools = _pools(store, made, 2)
    with pools.use("img0"):
        pass
    with pools.use("img1"):
        pass
    with pools.use("img0"):  # img1 is now the least recently used
        pass
    with pools.use("img2"):
        assert pools.warm() == [ids[0], ids[2]]
    assert made[1].closed and not made[0].closed and pools.evictions == 1
    # A held pool (a session's) is never evicted; the bound is restored once it is released.
    runner, release = pools.hold("img0")
    with pools.use("img1"), pools.use("img2"):
        assert ids[0] in pools.warm()
    release()
    release()  # idempotent
    assert len(pools.warm()) == 2
    assert runner is made[0]
    pools.close()


def test_unknown_image_is_a_validation_error(store: ImageStore) -> None:
    pools = _pools(store, [], 2)
    with pytest.raises(ImageNotFound), pools.use("missing"):
        pass
