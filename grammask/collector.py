"""`paused`: Python's cyclic garbage collector held off while a grammar is compiled.

Compiling a grammar (normalising it, the lexemes' automata, the parser's first sets, the first
mask) allocates tens of thousands of small objects, most of which live until the compile ends and
then go by reference counting. Each collection the allocations trigger meanwhile scans the young
objects again, and now and then a full one scans the whole heap of a long-running process (every
cached grammar's objects). Paused for the lexemes alone, the collector's passes had been 10-20% of
their time; paused for all of `grammask.compile`, the mean time to first mask over every 5th
MaskBench schema fell by 3% more (in two paired runs; the median did not move), with the same time
in the decoding steps that followed. (Pausing it for the front-ends too saved nothing more: the
grammar a front-end returns is alive when its pause ends, and the collection deferred to then
scans it all the same.)

The collector is process-wide: while one thread compiles, no thread's cycles are collected (a
compile takes milliseconds; `Limits.compile_timeout_s` bounds it). Where the collector is off
already, it is left off; a thread that turns it off while a compile runs finds it on again after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused() -> Iterator[None]:
    """Hold the cyclic garbage collector off inside the block (nothing where it is off already)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
