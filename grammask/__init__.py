"""grammask: make a language model's output follow a format by construction.

vocab = Vocabulary.from_gguf(path)                 # token id -> bytes, special and EOS tokens
compiled = compile(Grammar.from_regex(r"\\d+"), vocab)
matcher = compiled.matcher()
bitmask = allocate_bitmask(1, vocab.size)
matcher.fill_bitmask(bitmask)                      # then mask the logits, sample, matcher.advance(token)
"""

from typing import Any as _Any

from grammask.bitmask import allocate_bitmask, unpack_bitmask
from grammask.compiler import CompiledGrammar, compile
from grammask.errors import GenerationError, GrammarError, GrammaskError, VocabularyError
from grammask.grammar import Grammar
from grammask.limits import DEFAULT_LIMITS, Limits
from grammask.matcher import BatchMatcher, Matcher
from grammask.processors import ForbidCharacters, GrammarConstraint, Pipeline, apply_token_bitmask
from grammask.vocab import Vocabulary

# The generation loop needs torch and transformers (the `model` extra): import it on first use, so
# that `import grammask` stays numpy-only.
_LAZY = {"generate": "grammask.generation", "load_model": "grammask.generation"}


def __getattr__(name: str) -> _Any:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "integrations":  # `grammask.integrations.transformers` after a plain `import grammask`
        return importlib.import_module("grammask.integrations")
    raise AttributeError(f"module 'grammask' has no attribute {name!r}")


__all__ = [
    "BatchMatcher",
    "CompiledGrammar",
    "DEFAULT_LIMITS",
    "ForbidCharacters",
    "GenerationError",
    "Grammar",
    "GrammarConstraint",
    "GrammarError",
    "GrammaskError",
    "Limits",
    "Matcher",
    "Pipeline",
    "Vocabulary",
    "VocabularyError",
    "allocate_bitmask",
    "apply_token_bitmask",
    "compile",
    "generate",
    "load_model",
    "unpack_bitmask",
]
