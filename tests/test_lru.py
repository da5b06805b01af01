"""`LRUCache`: least recently used out first, within a byte budget."""

import threading

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
