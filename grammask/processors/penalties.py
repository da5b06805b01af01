"""Processors that look at the tokens so far: repetition penalty, no-repeat n-grams, minimum length."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grammask.processors.backend import TokenMask, ops_for
from grammask.processors.base import GenerationContext, Stage, StatelessProcessor

__all__ = ["MinLength", "NoRepeatNGram", "RepetitionPenalty"]


@dataclass(frozen=True)
class RepetitionPenalty(StatelessProcessor):
    """Make every token already in the sequence (prompt included) less likely, as in CTRL: a positive
    logit is divided by `penalty`, a negative one multiplied, once however often the token occurs."""

    penalty: float
    stage = Stage.PENALTY

    def __post_init__(self) -> None:
        if not self.penalty > 0:
            raise ValueError(f"repetition penalty must be positive, got {self.penalty}")

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        if self.penalty == 1 or ctx.current_length == 0:
            return logits
        ops = ops_for(logits)
        seen = ops.token_flags(ops.asarray(ctx.sequences, logits), None, logits.shape[-1])
        penalised = ops.where(logits < 0, logits * self.penalty, logits / self.penalty)
        return ops.where(seen, penalised, logits)


@dataclass(frozen=True)
class NoRepeatNGram(StatelessProcessor):
    """Forbid any token that would complete an n-gram (of size `n`) already present in the sequence."""

    n: int
    stage = Stage.MASK

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"no-repeat n-gram size must be >= 1, got {self.n}")

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        if ctx.current_length < self.n:
            return logits
        ops = ops_for(logits)
        seq = ops.asarray(ctx.sequences, logits)
        grams = ops.windows(seq, self.n)  # [batch, count, n]
        tail = seq[:, ctx.current_length - self.n + 1 :]  # the last n - 1 tokens
        repeats = (grams[..., :-1] == tail[:, None, :]).all(-1)
        banned = ops.token_flags(grams[..., -1], repeats, logits.shape[-1])
        return ops.keep(~banned, logits)


class MinLength(StatelessProcessor):
    """Suppress the end-of-sequence tokens until `min_new_tokens` tokens have been generated."""

    def __init__(self, min_new_tokens: int, eos_token_ids: Iterable[int] | int) -> None:
        ids = (eos_token_ids,) if isinstance(eos_token_ids, int) else tuple(eos_token_ids)
        if not ids:
            raise ValueError("MinLength needs at least one end-of-sequence token id")
        self.min_new_tokens = min_new_tokens
        self.eos_token_ids = ids
        self._eos = TokenMask.from_ids(ids)

    def __repr__(self) -> str:
        return f"MinLength({self.min_new_tokens}, {list(self.eos_token_ids)})"

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        return logits if ctx.generated >= self.min_new_tokens else self._eos.remove(logits)
