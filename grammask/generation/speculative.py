"""Speculative decoding that stays exact under a format: draft, verify in one pass, roll back.

A drafter guesses the next few tokens cheaply (`NgramDrafter`: prompt lookup, no second model). The
target model then scores the row's pending tokens and the draft in one forward pass, which gives
logits at `len(draft) + 1` positions. `verify_draft` walks them left to right: at each position it
picks a token exactly as token-by-token decoding would (the mask of the matcher's current state, then
greedy or sampling), takes it, and goes on only while the pick equals the drafted token. So the
output is the one token-by-token decoding gives, token for token, whatever the drafter proposed: a
drafted token the grammar forbids is never picked, hence never accepted. Each verification yields at
least one token (the first pick needs no draft) and at most `len(draft) + 1`. The KV entries of the
rejected draft positions are then dropped (`crop_cache`) or masked out of attention.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from grammask.matcher import Matcher

__all__ = ["Drafter", "NgramDrafter", "crop_cache", "verify_draft"]


@runtime_checkable
class Drafter(Protocol):
    """Anything that proposes the tokens likely to follow `context` (prompt then generated ids)."""

    def propose(self, context: Sequence[int]) -> list[int]: ...


class NgramDrafter:
    """Prompt-lookup drafting: continue the text the way it went after the same n-gram earlier.

    The longest suffix n-gram of the context (`n_max` down to `n_min` tokens) is looked up in the
    earlier context; the up to `k` tokens that followed its most recent occurrence are the draft.
    JSON with repeated keys, code, and answers quoting the prompt are where this pays.
    """

    def __init__(self, n_max: int = 3, n_min: int = 1, k: int = 4) -> None:
        if not 1 <= n_min <= n_max:
            raise ValueError(f"need 1 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.n_max, self.n_min, self.k = n_max, n_min, k

    def __repr__(self) -> str:
        return f"NgramDrafter(n_max={self.n_max}, n_min={self.n_min}, k={self.k})"

    def propose(self, context: Sequence[int]) -> list[int]:
        """Up to `k` tokens that followed the last match of the context's longest suffix n-gram; [] if none."""
        ids = np.asarray(context, dtype=np.int64)
        size = len(ids)
        if size < self.n_min + 1:
            return []
        # Earlier positions holding the last token (the suffix itself excluded): candidate match ends.
        ends = np.flatnonzero(ids[:-1] == ids[-1])
        if not len(ends):
            return []
        # Match length of each candidate against the suffix, up to n_max: the run of equal tokens
        # going backwards from each end (positions before the start of the context never match).
        back = np.arange(min(self.n_max, size - 1))
        before = ends[:, None] - back
        suffix = ids[size - 1 - back]
        equal = (before >= 0) & (ids[np.maximum(before, 0)] == suffix)
        lengths = np.cumprod(equal, axis=1).sum(axis=1)
        best = int(lengths.max())
        if best < self.n_min:
            return []
        end = int(ends[lengths == best].max())  # the most recent occurrence of the longest n-gram
        return ids[end + 1 : end + 1 + self.k].tolist()


def verify_draft(
    matcher: Matcher | None,
    draft: Sequence[int],
    logits: Any,
    pick: Callable[[Any, Matcher | None], int],
    *,
    end_ids: Collection[int] = (),
    on_accept: Callable[[int], bool] | None = None,
) -> list[int]:
    """The tokens accepted from one verification pass (at least one); `matcher` ends advanced by them.

    `logits[i]` is the target model's output after `draft[:i]` (`len(draft) + 1` positions). At each
    position `pick(logits[i], matcher)` chooses a token under the mask of the matcher's current state
    (greedy or sampled); the matcher takes it, and verification goes on only while it equals
    `draft[i]`. It also stops after a token that finishes the matcher or is in `end_ids` (how a row
    without a matcher ends). `on_accept(token)`, if given, is called after each accepted token and
    stops verification by returning False: a decoding loop uses it to stop where it would not pick
    the next token from the model itself (forced text to append, a stop string, the budget).
    With a deterministic `pick` the result is what token-by-token decoding gives.
    """
    if len(logits) < len(draft) + 1:
        raise ValueError(f"a draft of {len(draft)} tokens needs {len(draft) + 1} logits positions, got {len(logits)}")
    accepted: list[int] = []
    for i in range(len(draft) + 1):
        token = int(pick(logits[i], matcher))
        if matcher is not None and not matcher.advance(token):
            raise ValueError(f"pick chose token {token}, which the matcher does not allow")
        accepted.append(token)
        finished = token in end_ids or (matcher is not None and matcher.is_finished())
        if on_accept is not None and not on_accept(token):
            break
        if finished or i == len(draft) or token != draft[i]:
            break
    return accepted


def crop_cache(past_key_values: Any, length: int) -> Any:
    """Roll a transformers KV cache back to its first `length` positions; returns the cache.

    A `DynamicCache` (or any cache with `crop` and `get_seq_length`) is cropped in place; legacy
    tuples of `(key, value)` per layer (`[batch, heads, positions, dim]`) come back as new tuples.
    """
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    if past_key_values is None:
        return None
    if hasattr(past_key_values, "crop"):
        remove = past_key_values.get_seq_length() - length
        if remove > 0:  # negative: "remove that many", read the same by transformers 4 and 5
            past_key_values.crop(-remove)
        return past_key_values
    return tuple((key[..., :length, :], value[..., :length, :], *rest) for key, value, *rest in past_key_values)
