"""Warm pools per image: one sandbox pool (fork server + armed slots) per image in use.

A run on an image needs a fork server started in that image (its Python, its libraries),
so each image in use gets its own :class:`~assay.runner.Runner` over its own
:class:`~assay.sandbox.Sandbox`. At most ``max_images`` are kept; when another image is
needed the least recently used pool is closed (its fork server and idle slots end; a run in
flight on it finishes first: pools are closed only once no run holds them).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Generic, Protocol, TypeVar

from .. import defaults
from ..languages.cache import CompileCache
from ..sandbox import SandboxConfig
from .store import Image, ImageStore


class Closable(Protocol):
    def close(self) -> None: ...


#: What a pool holds: the runner (``assay.runner.Runner``) made by the owner's factory.
PoolT = TypeVar("PoolT", bound=Closable)

#: The interpreter inside an image.
IMAGE_PYTHON = "/usr/bin/python3"


class ImagePools(Generic[PoolT]):
    """``(isolation tier, image) -> Runner`` with LRU eviction; thread-safe. ``make``
    builds a runner from a sandbox configuration, an idle-pool size and a compile cache."""

    def __init__(
        self,
        base: SandboxConfig,
        make: Callable[[SandboxConfig, int, CompileCache], PoolT],
        store: ImageStore | None = None,
        max_images: int = defaults.IMAGE_POOLS_WARM,
        pool_size: int = defaults.IMAGE_POOL_SIZE,
    ) -> None:
        self.base = base
        self.store = store or ImageStore()
        self.max_images = max(1, max_images)
        self.pool_size = pool_size
        self._make = make
        self._lock = threading.Lock()
        self._pools: collections.OrderedDict[str, PoolT] = collections.OrderedDict()
        self._users: collections.Counter[str] = collections.Counter()
        self._closed = False
        self.evictions = 0

    def resolve(self, ref: str) -> Image:
        """The stored image ``ref`` names (ImageNotFound, a ValidationError, if none)."""
        return self.store.get(ref)

    @contextmanager
    def use(self, ref: str, isolation: str | None = None) -> Iterator[PoolT]:
        """The warm runner of image ``ref`` (in tier ``isolation``, default the base
        configuration's), held for the duration of the block."""
        image = self.resolve(ref)
        key = self._key(image, isolation)
        runner = self._acquire(image, key)
        try:
            yield runner
        finally:
            self._release(key)

    def _key(self, image: Image, isolation: str | None) -> str:
        return f"{isolation or self.base.isolation}:{image.id}"

    def hold(self, ref: str, isolation: str | None = None) -> tuple[PoolT, Callable[[], None]]:
        """The runner of image ``ref`` and the call that releases it, for holders that
        outlive a block (a session): a held pool is never evicted."""
        image = self.resolve(ref)
        key = self._key(image, isolation)
        runner = self._acquire(image, key)
        done = threading.Event()

        def release() -> None:
            if not done.is_set():
                done.set()
                self._release(key)

        return runner, release

    def _acquire(self, image: Image, key: str) -> PoolT:
        with self._lock:
            if self._closed:
                from ..errors import SandboxError

                raise SandboxError("image pools are closed")
            runner = self._pools.get(key)
            if runner is None:
                config = replace(
                    self.base,
                    image_root=image.path,
                    python=IMAGE_PYTHON,
                    isolation=key.split(":", 1)[0],
                )
                cache = CompileCache(defaults.compile_cache_dir() / "images" / image.id)
                runner = self._make(config, self.pool_size, cache)
                self._pools[key] = runner
            self._pools.move_to_end(key)
            self._users[key] += 1
            victims = self._evict_locked()
        for victim in victims:
            victim.close()
        return runner

    def _release(self, key: str) -> None:
        with self._lock:
            self._users[key] -= 1
            if self._users[key] <= 0:
                del self._users[key]
            victims = self._evict_locked()
        for victim in victims:
            victim.close()

    def _evict_locked(self) -> list[PoolT]:
        """Drop least recently used pools beyond ``max_images`` that no run holds (the
        caller closes them, outside the lock): their fork server and idle slots end; the
        image's next run starts a new pool."""
        victims = []
        for key in list(self._pools):
            if len(self._pools) <= self.max_images:
                break
            if self._users[key] > 0:
                continue
            victims.append(self._pools.pop(key))
            self.evictions += 1
        return victims

    def warm(self) -> list[str]:
        """Ids of the images whose pools are kept, most recently used last."""
        with self._lock:
            return [key.split(":", 1)[1] for key in self._pools]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            runners = list(self._pools.values())
            self._pools.clear()
        for runner in runners:
            runner.close()
