"""Applying a packed token bitmask to logits.

The bitmask is the int32 layout shared with llguidance, XGrammar and vLLM: row `r`, token `t` is
bit `t % 32` of word `bitmask[r, t // 32]`, 1 = allowed. Logits wider than the bitmask (a model whose
logits have padding columns past the vocabulary) get -inf past `32 * words`: a token the mask does
not describe is never allowed. Narrower logits use the mask's first columns.
"""

from __future__ import annotations

from typing import Any

from grammask.processors.backend import ops_for

__all__ = ["apply_token_bitmask"]


def apply_token_bitmask(logits: Any, bitmask: Any, *, inplace: bool = False) -> Any:
    """`logits` (`[batch, vocab]` or `[vocab]`, numpy or torch) with every disallowed token set to -inf.

    `bitmask` is `[batch, words]`, `[1, words]` or `[words]` int32 (numpy or torch). For torch logits
    on an accelerator the packed words are moved to the device and unpacked there. Returns a new
    array, or with `inplace=True` writes into `logits` and returns it (no allocation: at batch 8
    and 128k tokens, allocating the result costs as much as masking it).
    """
    ops = ops_for(logits)
    rows = 1 if logits.ndim == 1 else logits.shape[0]
    mask_rows = 1 if bitmask.ndim == 1 else bitmask.shape[0]
    if bitmask.ndim > 2 or mask_rows not in (1, rows):
        raise ValueError(f"bitmask of shape {tuple(bitmask.shape)} does not fit logits of shape {tuple(logits.shape)}")
    allowed = ops.unpack_bitmask(bitmask, logits.shape[-1], logits)
    if logits.ndim == 1:
        allowed = allowed[0]
    return ops.keep(allowed, logits, out=logits if inplace else None)
