"""Whole-text recognition without a vocabulary: does a grammar accept some bytes?

Used by tests and front-ends to check a grammar against sample texts; the engine is the same one
that computes token masks, so what `accepts` says is what constrained decoding allows.
"""

from __future__ import annotations

from grammask.engine.parser import Parser
from grammask.ir.grammar import Grammar
from grammask.ir.normalise import normalise
from grammask.limits import DEFAULT_LIMITS, Limits

__all__ = ["accepts", "accepts_prefix", "parser_for"]


def parser_for(grammar: Grammar, limits: Limits = DEFAULT_LIMITS) -> Parser:
    """A parser for `grammar` whose special-token terminals match nothing (text only)."""
    bnf = normalise(grammar, limits)
    return Parser(bnf, [() for _ in bnf.terminals], limits)


def accepts(grammar: Grammar | Parser, data: bytes | str) -> bool:
    """Whether `data` is a complete sentence of the grammar."""
    parser = grammar if isinstance(grammar, Parser) else parser_for(grammar)
    config = parser.step_bytes(parser.initial, data.encode() if isinstance(data, str) else data)
    return config is not None and config.accepting


def accepts_prefix(grammar: Grammar | Parser, data: bytes | str) -> bool:
    """Whether `data` can be extended to a complete sentence of the grammar."""
    parser = grammar if isinstance(grammar, Parser) else parser_for(grammar)
    config = parser.step_bytes(parser.initial, data.encode() if isinstance(data, str) else data)
    return config is not None and not config.is_dead
