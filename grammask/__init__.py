"""grammask: make a language model's output follow a format by construction.

    vocab = Vocabulary.from_gguf(path)                 # token id -> bytes, special and EOS tokens
    compiled = compile(Grammar.from_regex(r"\\d+"), vocab)
    matcher = compiled.matcher()
    bitmask = allocate_bitmask(1, vocab.size)
    matcher.fill_bitmask(bitmask)                      # then mask the logits, sample, matcher.advance(token)
"""

from grammask.bitmask import allocate_bitmask, unpack_bitmask
from grammask.compiler import CompiledGrammar, compile
from grammask.errors import GenerationError, GrammarError, GrammaskError, VocabularyError
from grammask.ir.grammar import Grammar
from grammask.limits import DEFAULT_LIMITS, Limits
from grammask.matcher import BatchMatcher, Matcher
from grammask.processors import ForbidCharacters, GrammarConstraint, Pipeline, apply_token_bitmask
from grammask.vocab import Vocabulary

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
    "unpack_bitmask",
]
