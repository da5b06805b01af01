"""Regex front-end: a whole-text regular expression as a one-rule grammar."""

from __future__ import annotations

from grammask.frontends.regex_syntax import parse_regex
from grammask.ir.grammar import Grammar, lex

__all__ = ["grammar_from_regex"]


def grammar_from_regex(pattern: str) -> Grammar:
    """Text matching `pattern` as a whole (Python `re` syntax; `^`/`$` allowed at the ends)."""
    return Grammar({"root": lex(parse_regex(pattern))})
