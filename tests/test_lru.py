"""`LRUCache`: least recently used out first, within a byte budget."""

import threading

import numpy as np

from grammask.lru import OBJECT_BYTES, LRUCache


def test_lru_within_budget():
    cache = LRUCache(budget=3 * (100 + OBJECT_BYTES))
    for key in "abc":
        cache.put(key, key.upper(), 100)
    assert cache.get("a") == "A"  # "a" is now the most recently used
    cache.put("d", "D", 100)
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("d") == "D"
    assert cache.nbytes <= cache.budget
    stats = cache.stats()
    assert (stats.entries, stats.evictions, stats.hits, stats.misses) == (3, 1, 3, 1)
    assert 0 < stats.hit_rate < 1


def test_an_entry_larger_than_the_budget_replaces_everything():
    cache = LRUCache(budget=1000)
    cache.put("small", 1, 10)
    cache.put("big", 2, 5000)
    assert cache.get("small") is None and cache.get("big") == 2 and len(cache) == 1


def test_threads_keep_the_accounting_exact():
    cache = LRUCache(budget=50 * (8 + OBJECT_BYTES))

    def run(offset: int) -> None:
        for i in range(2000):
            cache.put((offset, i % 97), i, 8)
            cache.get((offset, (i * 7) % 97))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.nbytes == len(cache) * (8 + OBJECT_BYTES) <= cache.budget


def test_an_array_held_by_several_entries_is_counted_once_while_one_holds_it():
    cache = LRUCache(budget=10**6)
    mask = np.zeros(1000, dtype=np.int32)  # 4000 bytes
    cache.put("walk", (mask, "splits"), 50, (mask,))
    cache.put("scan", mask, 0, (mask,))
    assert cache.nbytes == 4000 + 50 + 2 * OBJECT_BYTES
    cache.put("scan", mask, 0, (mask,))  # replaced: still one holder more, not two
    assert cache.nbytes == 4000 + 50 + 2 * OBJECT_BYTES
    small = LRUCache(budget=4000 + 50 + 2 * OBJECT_BYTES)
    small.put("walk", (mask, "splits"), 50, (mask,))
    small.put("scan", mask, 0, (mask,))
    small.put("other", 1, 0)  # over the budget: "walk" goes, "scan" still holds the mask
    assert small.get("walk") is None and small.get("scan") is mask
    assert small.nbytes == 4000 + 2 * OBJECT_BYTES
    small.put("more", 2, 3000)  # now "other" and "scan" go, and the mask's bytes with the last holder
    assert small.get("scan") is None and len(small) == 1 and small.nbytes == 3000 + OBJECT_BYTES
    small.clear()
    assert small.nbytes == 0 and not small._held
