"""A least-recently-used cache bounded by its number of entries and by their size in bytes.

Counting entries alone is not a bound on memory when one entry can be a thousand times
another (a replay of a 1,000-message transcript beside one of the bike shop): each cache
here weighs its values, and drops the least recently used until both bounds hold.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    entries: int
    bytes: int


class LRUCache(Generic[K, V]):
    """Safe across threads. `weigh(key, value)` gives an entry's size in bytes; an entry larger
    than the whole byte budget is never kept."""

    def __init__(self, max_entries: int, max_bytes: int, weigh: Callable[[K, V], int]):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._hits = self._misses = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self._misses += 1
                return None
            self._hits += 1
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V) -> None:
        size = self._weigh(key, value)
        with self._lock:
            self._discard(key)
            if size > self.max_bytes or self.max_entries < 1:
                return
            self._items[key] = (value, size)
            self._bytes += size
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                self._discard(next(iter(self._items)))

    def reweigh(self, key: K) -> None:
        """Weigh an entry again, when its value grew since it was put (the least recently used
        others go if the budget no longer holds)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return
            size = self._weigh(key, found[0])
            self._items[key] = (found[0], size)
            self._bytes += size - found[1]
            while len(self._items) > 1 and self._bytes > self.max_bytes:
                self._discard(next(iter(self._items)))

    def pop(self, key: K) -> None:
        with self._lock:
            self._discard(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._items), self._bytes)

    def _discard(self, key: K) -> None:
        found = self._items.pop(key, None)
        if found is not None:
            self._bytes -= found[1]


class Memoized(Generic[V]):
    """`function(text)` remembered in an LRUCache; `cache_info` and `cache_clear` as functools names them."""

    def __init__(self, function: Callable[[str], V], max_entries: int, max_bytes: int, weigh: Callable[[str, V], int]):
        self._function = function
        self.cache: LRUCache[str, V] = LRUCache(max_entries, max_bytes, weigh)

    def __call__(self, text: str) -> V:
        found = self.cache.get(text)
        if found is None:
            found = self._function(text)
            self.cache.put(text, found)
        return found

    def cache_info(self) -> CacheInfo:
        return self.cache.info()

    def cache_clear(self) -> None:
        self.cache.clear()
