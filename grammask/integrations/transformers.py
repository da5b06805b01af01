"""transformers adapter: constrain `model.generate(..., logits_processor=[...])` with any grammar.

`GrammaskLogitsProcessor` wraps `grammask.processors.GrammarConstraint`: at each call it feeds the
matchers the tokens `generate` appended since the last call and masks the scores. It keeps state
across calls, so use one instance per `generate` call (or call `reset()` between calls).
Only this module imports transformers; the grammask core never does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    from transformers import LogitsProcessor
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("grammask.integrations.transformers needs transformers: pip install 'grammask[model]'") from exc

from grammask.compiler import CompiledGrammar
from grammask.grammar import Grammar
from grammask.processors import GenerationContext, GrammarConstraint, GrammarState

__all__ = ["GrammaskLogitsProcessor"]


class GrammaskLogitsProcessor(LogitsProcessor):
    """A `transformers.LogitsProcessor` that allows only tokens that keep each row in its format.

    `formats` is one format for every row or one per row: a `CompiledGrammar`, or a `Grammar` (then
    `tokenizer` is required and `model` or `vocab_size` gives the logits width), or None for a free
    row. The prompt length is taken from the first call. Whatever `generate` appends to a row after
    its end-of-sequence token (its padding) is ignored.
    """

    def __init__(
        self,
        formats: CompiledGrammar | Grammar | None | Sequence[CompiledGrammar | Grammar | None],
        *,
        tokenizer: Any = None,
        model: Any = None,
        vocab_size: int | None = None,
    ) -> None:
        many = isinstance(formats, Sequence)
        items: list[CompiledGrammar | Grammar | None] = list(formats) if isinstance(formats, Sequence) else [formats]
        if any(isinstance(f, Grammar) for f in items):
            from grammask.generation.formats import compile_formats, logits_width

            if tokenizer is None:
                raise ValueError("compiling a Grammar needs the tokenizer: pass tokenizer=...")
            width = vocab_size or (logits_width(model) if model is not None else len(tokenizer))
            compiled = compile_formats(items, len(items), tokenizer, width)
        else:
            compiled = [f for f in items if not isinstance(f, Grammar)]
        first = compiled[0]
        self.constraint = GrammarConstraint(compiled if many or first is None else first)
        self._eos = next((g.vocab.eos_ids[0] for g in compiled if g is not None and g.vocab.eos_ids), 0)
        self._state: GrammarState | None = None
        self._input_length = 0

    def reset(self) -> None:
        """Forget the sequences seen so far, for a new `generate` call."""
        self._state = None
        self._input_length = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self._state is None:
            self._state = self.constraint.init(input_ids.shape[0])
            self._input_length = input_ids.shape[1]
        state = self._state
        if state.fed is not None and input_ids.shape[1] > state.fed:
            finished = [r for r, m in enumerate(state.matchers) if m is not None and m.is_finished()]
            if finished:  # padding after the end: show the matchers end-of-sequence tokens instead
                input_ids = input_ids.clone()
                input_ids[finished, state.fed :] = self._eos
        ctx = GenerationContext(input_ids, self._input_length, input_ids.shape[1])
        masked, self._state = self.constraint.process(scores, state, ctx)
        return masked
