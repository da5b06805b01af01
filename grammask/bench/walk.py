"""Time one engine through the tokens of a text: the measurement both benchmark modes share.

Each step is what a decoding loop does: fill the bitmask, check the sampled token's bit, advance.
`mask_us` times the fill alone, `step_us` the whole step. After the last token one more mask is
filled (timed as a step too) and the EOS bits read: the text is complete exactly when an EOS id is
allowed there. `cpu_us` is the step's CPU time in this thread: a step that the wall clock shows
long because the machine paused the process (a shared virtual machine does) is short there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter_ns, thread_time_ns

import numpy as np

from grammask.bench.engines import Compiled, Session

__all__ = ["Walk", "first_mask", "walk"]


@dataclass
class Walk:
    """What happened to one token sequence."""

    #: Tokens accepted before the first rejected one (== len(tokens) when none was rejected).
    accepted: int
    #: All tokens accepted and an EOS id allowed after them.
    finished: bool
    #: Steps where the mask allowed the token but `advance` refused it (a bug in the engine).
    inconsistent: int
    mask_us: np.ndarray
    step_us: np.ndarray
    cpu_us: np.ndarray
    #: The bitmask at every step (bytes of the int32 row), when asked for.
    masks: list[bytes] = field(default_factory=list)


def _allowed(row: np.ndarray, token: int) -> bool:
    return bool((int(row[token >> 5]) >> (token & 31)) & 1)


def first_mask(compiled: Compiled, bitmask: np.ndarray) -> Session:
    """A new session with its first mask filled (the end of time-to-first-mask)."""
    session = compiled.session()
    session.fill(bitmask)
    return session


def walk(
    session: Session,
    tokens: Sequence[int],
    eos_ids: Sequence[int],
    bitmask: np.ndarray,
    *,
    keep_masks: bool = False,
) -> Walk:
    """Feed `tokens` to `session` (fresh, nothing filled yet), stopping at the first rejection."""
    n = len(tokens)
    mask_us = np.empty(n + 1, dtype=np.float32)
    step_us = np.empty(n + 1, dtype=np.float32)
    cpu_us = np.empty(n + 1, dtype=np.float32)
    row = bitmask[0]
    masks: list[bytes] = []
    fill, advance = session.fill, session.advance
    inconsistent = 0
    accepted = 0
    for i, token in enumerate(tokens):
        c0 = thread_time_ns()  # outside the wall-clock window: it costs about a microsecond
        t0 = perf_counter_ns()
        fill(bitmask)
        t1 = perf_counter_ns()
        ok = _allowed(row, token) and advance(token)
        t2 = perf_counter_ns()
        cpu_us[i] = (thread_time_ns() - c0) / 1e3
        mask_us[i] = (t1 - t0) / 1e3
        step_us[i] = (t2 - t0) / 1e3
        if keep_masks:
            masks.append(row.tobytes())
        if not ok:
            inconsistent += _allowed(row, token)
            return Walk(accepted, False, inconsistent, mask_us[: i + 1], step_us[: i + 1], cpu_us[: i + 1], masks)
        accepted += 1
    c0 = thread_time_ns()
    t0 = perf_counter_ns()
    fill(bitmask)
    finished = any(_allowed(row, t) for t in eos_ids)
    t1 = perf_counter_ns()
    cpu_us[n] = (thread_time_ns() - c0) / 1e3
    mask_us[n] = step_us[n] = (t1 - t0) / 1e3
    if keep_masks:
        masks.append(row.tobytes())
    return Walk(accepted, finished, inconsistent, mask_us, step_us, cpu_us, masks)
