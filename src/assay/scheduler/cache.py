"""A bounded, thread-safe LRU of finished results, keyed by a content hash.

GRPO samples many completions per prompt and models repeat themselves: identical programs
against identical tests under identical limits and toolchain give the same verdict, so they
are judged once. The key is computed by the caller (the executor) from everything that can
change the outcome; the cache never looks inside it.

Bounded twice: by entries and by bytes (``sizeof`` tells what an entry holds). A stream of
distinct results printing megabytes each must not grow the trusted process: an entry larger
than ``max_entry_bytes`` is not kept at all, and the least recently used entries go once the
total passes ``max_bytes``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from ..errors import ValidationError

V = TypeVar("V")


class ResultCache(Generic[V]):
    def __init__(
        self,
        max_entries: int = 100_000,
        *,
        max_bytes: int = 64 << 20,
        max_entry_bytes: int = 1 << 20,
        sizeof: Callable[[V], int] | None = None,
    ) -> None:
        if max_entries < 0:
            raise ValidationError("max_entries", "must be >= 0")
        if max_bytes < 0:
            raise ValidationError("max_bytes", "must be >= 0")
        if max_entry_bytes < 0:
            raise ValidationError("max_entry_bytes", "must be >= 0")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self._sizeof = sizeof or (lambda _v: 0)
        self._data: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        #: Bytes the kept entries hold (as ``sizeof`` counts them).
        self.nbytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> V | None:
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: str, value: V) -> None:
        if self.max_entries == 0:
            return
        size = self._sizeof(value)
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            if size > self.max_entry_bytes or size > self.max_bytes:
                return  # too large to keep: the next identical job runs again
            self._data[key] = (value, size)
            self.nbytes += size
            while len(self._data) > self.max_entries or self.nbytes > self.max_bytes:
                _k, (_v, gone) = self._data.popitem(last=False)
                self.nbytes -= gone

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.nbytes = 0
