"""`LRUCache`: a thread-safe map bounded by the bytes of its values, least recently used out first.

Every cache of derived data in grammask is one of these: what it holds is a pure function of its
key, so an entry can be dropped at any time and computed again, and memory stays flat however long
a process runs. A compiled grammar keeps one for everything the engine learns while decoding
(`Limits.max_cache_bytes`); `grammask.automata.compile` keeps one for lexeme DFAs. Sizes are exact
for numpy arrays (masks, walks, DFA tables, which dominate) and estimates for small Python objects.
An array that several entries hold (a mask that is both a walk's and a scan's) is counted once,
for as long as one of them holds it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

__all__ = ["OBJECT_BYTES", "CacheStats", "LRUCache"]

#: Estimated size of a small cached Python value (a parser state reference, a tuple).
OBJECT_BYTES = 160


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of one cache's counters."""

    entries: int
    bytes: int
    budget: int
    hits: int
    misses: int
    evictions: int

    @property
    def hit_rate(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


_MISSING = object()


class LRUCache:
    """A thread-safe LRU mapping bounded by the estimated bytes of its values."""

    __slots__ = ("budget", "_data", "_sizes", "_shares", "_held", "_bytes", "_lock", "_hits", "_misses", "_evictions")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        # Sizes apart from values: a (value, size) pair per entry would be one more object for the
        # garbage collector to scan, and caches hold tens of thousands of entries.
        self._sizes: dict[Hashable, int] = {}
        #: per entry with shared arrays: the arrays (which its value holds anyway); per such array,
        #: by id: how many entries hold it
        self._shares: dict[Hashable, tuple[Any, ...]] = {}
        self._held: dict[int, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = 0

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value stored under `key` (marked as recently used), or `default`.

        Without the lock: each of the two dict operations is atomic (the ordered dict is in C), and
        an entry dropped between them by another thread is simply not moved. The counters are
        statistics and may miss a concurrent update. Lookups are a few per token, and the lock
        was a third of their cost."""
        found = self._data.get(key, _MISSING)
        if found is _MISSING:
            self._misses += 1
            return default
        try:
            self._data.move_to_end(key)
        except KeyError:  # dropped meanwhile: the value found is still right
            pass
        self._hits += 1
        return found

    def put(self, key: Hashable, value: Any, nbytes: int = OBJECT_BYTES, shared: tuple[Any, ...] = ()) -> Any:
        """Store `value` under `key`, evicting the least recently used entries over the budget.
        `nbytes` is what `value` holds apart from `shared`: arrays in it that other entries may
        hold too, each counted once however many entries hold it. Returns `value`."""
        nbytes += OBJECT_BYTES  # the key and the bookkeeping
        with self._lock:
            data = self._data
            if key in data:  # computed again (by another thread, say): replace it
                del data[key]
                self._forget(key)
            data[key] = value
            self._sizes[key] = nbytes
            total = self._bytes + nbytes
            if shared:
                held = self._held
                for array in shared:
                    array_id = id(array)
                    count = held.get(array_id, 0)
                    held[array_id] = count + 1
                    if not count:
                        total += array.nbytes
                self._shares[key] = shared
            self._bytes = total
            while self._bytes > self.budget and len(data) > 1:
                # One call takes the oldest entry: an iterator over the dict would fail if a
                # lookup (`get`, without the lock) moved an entry meanwhile.
                oldest, _ = data.popitem(last=False)
                self._forget(oldest)
                self._evictions += 1
        return value

    def _forget(self, key: Hashable) -> None:
        """Drop the bookkeeping of an entry taken out of `_data`."""
        self._bytes -= self._sizes.pop(key)
        for array in self._shares.pop(key, ()):
            array_id = id(array)
            held = self._held.pop(array_id) - 1
            if held:
                self._held[array_id] = held
            else:
                self._bytes -= array.nbytes

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self._shares.clear()
            self._held.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._data), self._bytes, self.budget, self._hits, self._misses, self._evictions)

    def __len__(self) -> int:
        return len(self._data)
