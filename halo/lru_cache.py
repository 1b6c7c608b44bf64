"""`LRUCache`: values built on first request and kept by key, the least recently used
evicted past a capacity; safe to use from several threads. The compile caches of the
backends (compiled code) and of the driver (Kernels) are two of these."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Generic, TypeVar

V = TypeVar("V")


class LRUCache(Generic[V]):
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = Lock()

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value of `key`, built by `build()` if it isn't kept. Builds run outside the
        lock, so other keys are served meanwhile; when two threads build one key, the
        first value stored wins."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = build()
        with self._lock:
            value = self._entries.setdefault(key, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value
