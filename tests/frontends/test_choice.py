"""Choice front-end: exactly one of the options, as a prefix-shared lexeme."""

from __future__ import annotations

import re
import time

import pytest

import grammask
from grammask.engine.recognize import accepts, accepts_prefix
from grammask.errors import GrammarError
from grammask.frontends.choice import grammar_from_choice
from grammask.ir import grammar as g
from grammask.ir import regex as rx


@pytest.mark.parametrize(
    "options, bad",
    [
        (["yes", "no"], ["", "y", "yesno", "noo", "Yes"]),
        (["yes", "yesterday", "ye"], ["y", "yest", "yesterdays", "yeyes"]),
        (["", "a", "ab"], ["b", "aab", "abb"]),
        (["café", "日本", "😀!"], ["cafe", "日", "😀"]),
        (['{"a": 1}', "\n", "a|b", "(x)*"], ["a", "(x)", "{}"]),
    ],
)
def test_exactly_one_option(options, bad):
    grammar = grammar_from_choice(options)
    for text in options:
        assert accepts(grammar, text.encode()), text
    for text in bad:
        assert not accepts(grammar, text.encode()), text


def test_prefixes_of_options_can_be_extended():
    grammar = grammar_from_choice(["north", "northeast", "south"])
    assert accepts_prefix(grammar, b"northe")
    assert not accepts_prefix(grammar, b"northw")


def test_shared_prefixes_are_factored():
    grammar = grammar_from_choice(["yes", "yesterday", "no"])
    expected = rx.alt(rx.concat(rx.literal("yes"), rx.alt(rx.EMPTY, rx.literal("terday"))), rx.literal("no"))
    assert grammar.rules == {"root": g.lex(expected)}
    assert grammar == grammask.Grammar.choice(["yes", "yesterday", "no"])


def test_many_options_build_fast():
    options = [f"item-{i:05d}" for i in range(10_000)]
    began = time.perf_counter()
    grammar = grammar_from_choice(options)
    assert time.perf_counter() - began < 2.0
    assert accepts(grammar, b"item-09999")
    assert not accepts(grammar, b"item-10000")


def test_tokens_allowed_with_a_real_vocabulary(vocab_llama3):
    matcher = grammask.compile(grammar_from_choice(["yes", "no"]), vocab_llama3).matcher()
    allowed = set(matcher.allowed_token_ids().tolist())
    assert {vocab_llama3.token_id("yes"), vocab_llama3.token_id("no"), vocab_llama3.token_id("y")} <= allowed
    assert vocab_llama3.token_id("maybe") not in allowed
    assert not set(vocab_llama3.eos_ids) & allowed
    assert matcher.advance(vocab_llama3.token_id("yes"))
    assert set(matcher.allowed_token_ids().tolist()) == set(vocab_llama3.eos_ids)


@pytest.mark.parametrize(
    "options, words",
    [([], "at least one option"), (["a", 3], "option #1 is a int"), ("abc", "not one string")],
)
def test_errors(options, words):
    with pytest.raises(GrammarError, match=re.escape(words)):
        grammar_from_choice(options)
