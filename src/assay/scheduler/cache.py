"""A bounded, thread-safe LRU of finished results, keyed by a content hash.

GRPO samples many completions per prompt and models repeat themselves: identical programs
against identical tests under identical limits and toolchain give the same verdict, so they
are judged once. The key is computed by the caller (the executor) from everything that can
change the outcome; the cache never looks inside it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

from ..errors import ValidationError

V = TypeVar("V")


class ResultCache(Generic[V]):
    def __init__(self, max_entries: int = 100_000) -> None:
        if max_entries < 0:
            raise ValidationError("max_entries", "must be >= 0")
        self.max_entries = max_entries
        self._data: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: str, value: V) -> None:
        if self.max_entries == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
