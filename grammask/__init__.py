"""grammask: make a language model's output follow a format by construction."""

from grammask.errors import GenerationError, GrammarError, GrammaskError, VocabularyError
from grammask.ir.grammar import Grammar
from grammask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "DEFAULT_LIMITS",
    "GenerationError",
    "Grammar",
    "GrammarError",
    "GrammaskError",
    "Limits",
    "VocabularyError",
]
