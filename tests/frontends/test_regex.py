"""Regex front-end: a whole-text regex becomes a one-rule grammar over one lexeme."""

import pytest

from grammask import Grammar
from grammask.errors import GrammarError
from grammask.frontends.regex import grammar_from_regex
from grammask.ir import regex as rx
from grammask.ir.grammar import FAIL, Lex, Seq


def test_pattern_becomes_one_lexeme() -> None:
    grammar = grammar_from_regex("^[a-c]+x?$")
    assert grammar.start == "root" and list(grammar.rules) == ["root"]
    expected = rx.concat(rx.plus(rx.char_class([(97, 99)])), rx.optional(rx.literal("x")))
    assert grammar.rules["root"] == Lex(expected)


def test_grammar_from_regex_is_the_public_constructor() -> None:
    assert Grammar.from_regex("a|b").rules == grammar_from_regex("a|b").rules


def test_empty_string_only_regex_is_the_empty_sequence() -> None:
    assert grammar_from_regex("").rules["root"] == Seq(())
    assert grammar_from_regex("(?:)|^$").rules["root"] == Seq(())


def test_regex_matching_nothing_fails() -> None:
    assert grammar_from_regex("[^\\s\\S]").rules["root"] == FAIL


def test_errors_propagate_with_position() -> None:
    with pytest.raises(GrammarError, match="unsupported regex construct: lookbehind at position 1"):
        grammar_from_regex("a(?<=b)")
