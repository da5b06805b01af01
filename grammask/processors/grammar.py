"""The grammar constraint: each row's logits masked by its own matcher over a compiled grammar."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from grammask.bitmask import allocate_bitmask
from grammask.compiler import CompiledGrammar
from grammask.errors import GenerationError
from grammask.matcher import BatchMatcher, Matcher
from grammask.processors.backend import ops_for
from grammask.processors.base import GenerationContext, Stage
from grammask.processors.masking import apply_token_bitmask

__all__ = ["GrammarConstraint", "GrammarState"]


@dataclass
class GrammarState:
    """Per-batch state: one matcher per row (None: unconstrained), the bitmask buffer reused at every
    step, and how many columns of `sequences` the matchers have taken (None before the first step)."""

    matchers: list[Matcher | None]
    bitmask: np.ndarray
    fed: int | None = None


class GrammarConstraint:
    """Allow only the tokens that keep each row's text a prefix of its grammar's language.

    `grammars` is one compiled grammar for every row, or one per row (None for an unconstrained row);
    all must share the vocabulary size. At each step the matchers first take the tokens appended
    since the last step (a row that has finished takes further end-of-sequence tokens as padding),
    then the packed bitmask is filled and applied. End-of-sequence tokens are allowed exactly when a
    row's text is complete, and only they once it has finished. The state is updated in place.
    """

    stage: ClassVar[Stage] = Stage.MASK

    def __init__(self, grammars: CompiledGrammar | Sequence[CompiledGrammar | None]) -> None:
        self.per_row = not isinstance(grammars, CompiledGrammar)
        self.grammars: list[CompiledGrammar | None] = (
            [grammars] if isinstance(grammars, CompiledGrammar) else list(grammars)
        )
        sizes = {g.vocab.size for g in self.grammars if g is not None}
        if len(sizes) > 1:
            raise ValueError(f"the grammars of one batch must share a vocabulary size, got {sorted(sizes)}")
        if not sizes:
            raise ValueError("GrammarConstraint needs at least one grammar")
        self.vocab_size = sizes.pop()

    def __repr__(self) -> str:
        starts = [None if g is None else g.start for g in self.grammars]
        return f"GrammarConstraint({starts if self.per_row else starts[0]!r})"

    def init(self, batch: int) -> GrammarState:
        if self.per_row and batch != len(self.grammars):
            raise ValueError(f"{self!r} has {len(self.grammars)} rows of grammars but the batch has {batch}")
        grammars = self.grammars if self.per_row else self.grammars * batch
        matchers = [None if g is None else g.matcher() for g in grammars]
        return GrammarState(matchers, allocate_bitmask(batch, self.vocab_size))

    def process(self, logits: Any, state: GrammarState, ctx: GenerationContext) -> tuple[Any, GrammarState]:
        start = ctx.input_length if state.fed is None else state.fed
        if ctx.current_length > start:
            new = ops_for(ctx.sequences).to_host(ctx.sequences[:, start : ctx.current_length])
            self._advance(state, new, start)
        state.fed = ctx.current_length
        BatchMatcher(state.matchers).fill_bitmask(state.bitmask)
        empty = ~state.bitmask.any(axis=1)
        if empty.any():
            row = int(np.argmax(empty))
            raise GenerationError(
                f"row {row}: {self!r} allows no token at position {ctx.current_length} "
                f"(generated {ctx.generated} tokens)"
            )
        return apply_token_bitmask(logits, state.bitmask), state

    def _advance(self, state: GrammarState, tokens: np.ndarray, start: int) -> None:
        for row, matcher in enumerate(state.matchers):
            if matcher is None:
                continue
            eos = matcher.compiled.vocab.eos_ids
            for offset, token in enumerate(tokens[row].tolist()):
                if matcher.is_finished() and token in eos:
                    continue
                if not matcher.advance(token):
                    raise GenerationError(
                        f"row {row}: token {token} at position {start + offset} is not allowed by {self!r}"
                    )
