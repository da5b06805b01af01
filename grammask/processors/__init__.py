"""Logits processors for batches of numpy arrays or torch tensors, and the pipeline that runs them."""

from grammask.processors.base import GenerationContext, LogitsProcessor, Stage, StatelessProcessor
from grammask.processors.grammar import GrammarConstraint, GrammarState
from grammask.processors.masking import apply_token_bitmask
from grammask.processors.penalties import MinLength, NoRepeatNGram, RepetitionPenalty
from grammask.processors.pipeline import Pipeline
from grammask.processors.sampling import MinP, Temperature, TopK, TopP, greedy, masked_softmax, sample
from grammask.processors.tokens import ForbidCharacters, ForceBOS, ForceEOS, ForceTokens, SuppressTokens

__all__ = [
    "ForbidCharacters",
    "ForceBOS",
    "ForceEOS",
    "ForceTokens",
    "GenerationContext",
    "GrammarConstraint",
    "GrammarState",
    "LogitsProcessor",
    "MinLength",
    "MinP",
    "NoRepeatNGram",
    "Pipeline",
    "RepetitionPenalty",
    "Stage",
    "StatelessProcessor",
    "SuppressTokens",
    "Temperature",
    "TopK",
    "TopP",
    "apply_token_bitmask",
    "greedy",
    "masked_softmax",
    "sample",
]
