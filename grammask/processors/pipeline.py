"""A pipeline of logits processors, run in a fixed order, with greedy or seeded sampling on top.

Order (`Stage`, stable within a stage, so processors of one stage run in the order given):

1. masks: grammar constraints, suppressed and forbidden tokens, forced tokens, minimum length,
   no-repeat n-grams: they decide what is allowed, before anything measures the distribution;
2. penalties (repetition penalty; processors without a `stage` run here);
3. temperature;
4. truncation: top-k, top-p, min-p, on the tempered distribution of allowed tokens only.

After the processors have run, a row with no allowed token raises `GenerationError` naming the row
and the processor that removed its last token. The check costs one host synchronisation per step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grammask.errors import GenerationError
from grammask.processors import sampling
from grammask.processors.backend import ops_for
from grammask.processors.base import GenerationContext, LogitsProcessor, Stage

__all__ = ["Pipeline"]


class Pipeline:
    """Processors composed in stage order; follows the processor protocol itself."""

    def __init__(self, processors: Iterable[LogitsProcessor]) -> None:
        self.processors = tuple(sorted(processors, key=lambda p: getattr(p, "stage", Stage.PENALTY)))

    def __repr__(self) -> str:
        return f"Pipeline({list(self.processors)!r})"

    def init(self, batch: int) -> tuple[Any, ...]:
        return tuple(p.init(batch) for p in self.processors)

    def process(self, logits: Any, state: tuple[Any, ...], ctx: GenerationContext) -> tuple[Any, tuple[Any, ...]]:
        """Run every processor; raise `GenerationError` if a row has no token left."""
        ops = ops_for(logits)
        alive = [ops.alive(logits)]
        states = []
        for processor, s in zip(self.processors, state, strict=True):
            logits, s = processor.process(logits, s, ctx)
            alive.append(ops.alive(logits))
            states.append(s)
        alive_host = ops.to_host(ops.stack(alive))  # [1 + processors, batch]
        if not alive_host[-1].all():
            row = int(alive_host[-1].argmin())
            step = int(alive_host[:, row].argmin())
            culprit = "the model's logits (all -inf or NaN)" if step == 0 else repr(self.processors[step - 1])
            raise GenerationError(
                f"row {row}: every token is masked at position {ctx.current_length}; "
                f"the last allowed token was removed by {culprit}"
            )
        return logits, tuple(states)

    def greedy(self, logits: Any, state: tuple[Any, ...], ctx: GenerationContext) -> tuple[Any, tuple[Any, ...]]:
        """Process, then pick each row's most likely token: `(token ids [batch], state)`."""
        logits, state = self.process(logits, state, ctx)
        return sampling.greedy(logits), state

    def sample(
        self, logits: Any, state: tuple[Any, ...], ctx: GenerationContext, generator: Any = None
    ) -> tuple[Any, tuple[Any, ...]]:
        """Process, then draw each row's token from the softmax: `(token ids [batch], state)`.

        `generator` is as for `grammask.processors.sample` (a numpy or torch generator, or a seed).
        """
        logits, state = self.process(logits, state, ctx)
        return sampling.sample(sampling.masked_softmax(logits), generator), state
