"""Machine code for a few inner loops, when numba is installed.

numba is optional (`pip install "grammask[fast]"`). Each compiled function has a numpy (or plain
Python) implementation of the same computation beside it, which runs without numba or with
GRAMMASK_NO_JIT set, and the tests check that both give the same results. numba itself is
imported at the first call, not with grammask: it loads llvmlite, which breaks the module scan
vLLM's CPU workers run at start, and the vLLM plugin imports grammask in every vLLM process.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

__all__ = ["AVAILABLE", "jit"]

#: Whether numba is installed (and not turned off by GRAMMASK_NO_JIT).
AVAILABLE = not os.environ.get("GRAMMASK_NO_JIT") and importlib.util.find_spec("numba") is not None

#: Compiled functions by name (read by the tests that check the argument types they were compiled for).
jitted: dict[str, Any] = {}


def jit(name: str, function: Any) -> Any:
    """`function` compiled by numba (compiled, or loaded from numba's cache, at its first call)."""
    found = jitted.get(name)
    if found is None:
        import numba

        found = jitted[name] = numba.njit(cache=True, nogil=True)(function)
    return found
