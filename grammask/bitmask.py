"""The packed token bitmask shared with llguidance, XGrammar and vLLM.

A mask for a vocabulary of `V` logits is `ceil(V / 32)` int32 words; token `t` is allowed when bit
`t % 32` of word `t // 32` is set. A batch is a `[batch, words]` array, one row per sequence.
"""

from __future__ import annotations

import numpy as np

__all__ = ["allocate_bitmask", "bitmask_words", "unpack_bitmask"]


def bitmask_words(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


def allocate_bitmask(batch: int, vocab_size: int) -> np.ndarray:
    """A `[batch, ceil(vocab_size / 32)]` int32 bitmask with every token allowed."""
    return np.full((batch, bitmask_words(vocab_size)), -1, dtype=np.int32)


def unpack_bitmask(row: np.ndarray, vocab_size: int) -> np.ndarray:
    """One row of a bitmask as a bool array of `vocab_size` entries."""
    row = np.ascontiguousarray(row, dtype=np.int32)
    return np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab_size].astype(bool)
