"""Temperature, truncation (top-k, top-p, min-p), the masked softmax, and token selection.

Truncation works in logit space on thresholds, so tokens tied with the last one kept are all kept:
the result never depends on the order of equal logits. Masked tokens are -inf logits throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from grammask.errors import GenerationError
from grammask.processors.backend import ops_for
from grammask.processors.base import GenerationContext, Stage, StatelessProcessor

__all__ = ["MinP", "Temperature", "TopK", "TopP", "greedy", "masked_softmax", "sample"]

NEG_INF = float("-inf")


@dataclass(frozen=True)
class Temperature(StatelessProcessor):
    """Divide the logits by `temperature` (> 0; use `greedy` for temperature zero)."""

    temperature: float
    stage = Stage.TEMPERATURE

    def __post_init__(self) -> None:
        if not self.temperature > 0 or math.isinf(self.temperature):
            raise ValueError(f"temperature must be positive and finite, got {self.temperature}")

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        return logits if self.temperature == 1 else logits / self.temperature


@dataclass(frozen=True)
class TopK(StatelessProcessor):
    """Keep the `k` largest logits of each row (and any tied with the k-th)."""

    k: int
    stage = Stage.TRUNCATION

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"top-k needs k >= 1, got {self.k}")

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        if self.k >= logits.shape[-1]:
            return logits
        ops = ops_for(logits)
        return ops.keep(logits >= ops.kth_largest(logits, self.k), logits)


@dataclass(frozen=True)
class TopP(StatelessProcessor):
    """Nucleus sampling: keep the most probable tokens until their mass reaches `p`.

    A token is kept when the probability mass of the tokens ranked above it is below `p`; at least
    `min_tokens_to_keep` tokens are kept.
    """

    p: float
    min_tokens_to_keep: int = 1
    stage = Stage.TRUNCATION

    def __post_init__(self) -> None:
        if not 0 < self.p <= 1:
            raise ValueError(f"top-p needs 0 < p <= 1, got {self.p}")
        if self.min_tokens_to_keep < 1:
            raise ValueError(f"min_tokens_to_keep must be >= 1, got {self.min_tokens_to_keep}")

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        if self.p == 1:
            return logits
        ops = ops_for(logits)
        ranked = ops.sort_descending(logits)
        probs = ops.softmax(ranked)
        mass_above = ops.cumsum(probs) - probs
        kept = ops.count_true(mass_above < self.p).clip(min=self.min_tokens_to_keep, max=logits.shape[-1])
        return ops.keep(logits >= ops.take(ranked, kept - 1), logits)


@dataclass(frozen=True)
class MinP(StatelessProcessor):
    """Keep the tokens whose probability is at least `p` times the most probable one's.

    In logit space: keep `logit >= max_logit + log(p)`; at least `min_tokens_to_keep` tokens are kept.
    """

    p: float
    min_tokens_to_keep: int = 1
    stage = Stage.TRUNCATION

    def __post_init__(self) -> None:
        if not 0 <= self.p <= 1:
            raise ValueError(f"min-p needs 0 <= p <= 1, got {self.p}")
        if self.min_tokens_to_keep < 1:
            raise ValueError(f"min_tokens_to_keep must be >= 1, got {self.min_tokens_to_keep}")

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        if self.p == 0:
            return logits
        ops = ops_for(logits)
        threshold = ops.row_max(logits) + math.log(self.p)
        if self.min_tokens_to_keep > 1:
            k = min(self.min_tokens_to_keep, logits.shape[-1])
            kth = ops.kth_largest(logits, k)
            threshold = ops.minimum(threshold, kth)
        return ops.keep(logits >= threshold, logits)


def masked_softmax(logits: Any) -> Any:
    """Softmax of each row in at least float32, where -inf logits (masked tokens) get probability 0.

    Stable for any finite logits (±1e30 included): the row maximum is subtracted first, and +inf is
    clamped to the largest finite value. A row whose every logit is -inf comes out as all zeros.
    """
    return ops_for(logits).softmax(logits)


def greedy(logits: Any) -> Any:
    """The index of each row's largest logit (the lowest index among ties).

    Raises `GenerationError` naming the first row whose every logit is -inf (or that holds NaN).
    """
    ops = ops_for(logits)
    _check_rows(ops.to_host(ops.row_max(logits)[..., 0] > NEG_INF), "every logit is -inf or NaN")
    return ops.argmax(logits)


def sample(probs: Any, generator: Any = None) -> Any:
    """One token index per row drawn from `probs` (`[batch, vocab]`, as from `masked_softmax`).

    `generator` makes draws reproducible: a `numpy.random.Generator` for numpy arrays, a
    `torch.Generator` on the tensor's device for torch, or an int seed (a fresh generator seeded
    with it: the same seed gives the same draw). Tokens of probability 0 are never drawn. Raises
    `GenerationError` naming the first row with no probability mass (every token masked, or NaN).
    """
    ops = ops_for(probs)
    _check_rows(ops.to_host(probs.sum(-1) > 0), "no token has positive probability")
    return ops.multinomial(probs, generator)


def _check_rows(ok: Any, why: str) -> None:
    if not ok.all():
        row = int(ok.argmin())
        raise GenerationError(f"row {row}: {why}; nothing can be selected")
