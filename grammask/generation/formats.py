"""From what a caller passes as a format to compiled grammars for one model and tokenizer."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from grammask.compiler import CompiledGrammar, compile
from grammask.grammar import Grammar
from grammask.vocab import Vocabulary

__all__ = ["Format", "compile_formats", "logits_width", "tokenizer_vocabulary"]

#: A format for one row: a grammar, a grammar already compiled for the tokenizer, or None (free text).
Format = Grammar | CompiledGrammar | None

_vocabularies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def logits_width(model: Any) -> int:
    """The number of logits the model produces per position (its output embedding's rows)."""
    return int(model.get_output_embeddings().weight.shape[0])


def tokenizer_vocabulary(tokenizer: Any, width: int | None = None) -> Vocabulary:
    """The `Vocabulary` of a transformers tokenizer, `width` logits wide (built once per tokenizer)."""
    vocab = _vocabularies.get(tokenizer)
    if vocab is None:
        vocab = Vocabulary.from_huggingface(tokenizer)
        _vocabularies[tokenizer] = vocab
    if width is not None and width != vocab.size:
        if width < vocab.size:
            raise ValueError(f"the model has {width} logits but the tokenizer {vocab.size} tokens")
        vocab = vocab.with_size(width)
        _vocabularies[tokenizer] = vocab
    return vocab


def compile_formats(
    formats: Format | Sequence[Format], rows: int, tokenizer: Any, width: int
) -> list[CompiledGrammar | None]:
    """One compiled grammar (or None) per row: a single format is shared by every row."""
    if formats is None or isinstance(formats, (Grammar, CompiledGrammar)):
        formats = [formats] * rows
    formats = list(formats)
    if len(formats) != rows:
        raise ValueError(f"{len(formats)} formats for {rows} prompts: give one format, or one per prompt")
    compiled: list[CompiledGrammar | None] = []
    for f in formats:
        if isinstance(f, Grammar):
            f = compile(f, tokenizer_vocabulary(tokenizer, width))
        elif isinstance(f, CompiledGrammar) and f.vocab.size != width:
            raise ValueError(f"a grammar compiled for {f.vocab.size} logits used with a model that has {width}")
        elif f is not None and not isinstance(f, CompiledGrammar):
            raise TypeError(f"a format is a Grammar, a CompiledGrammar or None, not {type(f).__name__}")
        compiled.append(f)
    return compiled
