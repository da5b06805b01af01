"""`paused`: Python's cyclic garbage collector held off while a compile runs.

A compile allocates tens of thousands of small containers (a front-end's regex trees and rules, a
subset construction's sets), and most of them are garbage when it returns. With the collector on,
young collections scan them as they come, and the ones that live through two are counted towards
the next full collection, which then scans the whole heap during a later decoding step. Held off,
the collector meets only what the compile keeps. A compile makes no reference cycles (see
docs/design.md), so nothing waits for the collector meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic collector off, and turn it on again after (if it was on)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
