"""IR → BNF: inlining of regular rules, repeats as helper rules, unproductive rules dropped."""

import pytest

from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.ir.grammar import (
    INLINE_REGEX_SIZE,
    Grammar,
    Lex,
    Token,
    alt,
    literal,
    opt,
    ref,
    rep,
    seq,
    star,
    token,
)
from grammask.ir.normalise import normalise, terminal_symbol
from grammask.limits import Limits


def test_regular_rules_become_one_lexeme():
    g = Grammar({"root": seq(ref("a"), literal(","), ref("a")), "a": alt(literal("x"), literal("y"))})
    bnf = normalise(g)
    assert len(bnf.terminals) == 1
    assert isinstance(bnf.terminals[0], Lex)


def test_recursive_rules_stay_rules():
    g = Grammar({"root": alt(literal("x"), seq(literal("("), ref("root"), literal(")")))})
    bnf = normalise(g)
    assert {t.regex for t in bnf.terminals} == {rx.literal("x"), rx.literal("("), rx.literal(")")}


def test_nullable_lexeme_is_wrapped():
    g = Grammar({"root": seq(token(5), literal("a"), opt(literal("b")), token(6))})
    bnf = normalise(g)
    lexemes = [t for t in bnf.terminals if isinstance(t, Lex)]
    # "a" and "b?" merge into one lexeme "ab?", which is not nullable.
    assert lexemes == [Lex(rx.concat(rx.literal("a"), rx.optional(rx.literal("b"))))]
    g = Grammar({"root": seq(token(5), star(literal("a")), token(6))})
    bnf = normalise(g)
    empty = [rhs for lhs, rhs in bnf.productions if rhs == ()]
    assert empty, "a* between tokens becomes ε | a+"


def test_bounded_repeat_expands_into_helpers():
    g = Grammar({"root": rep(seq(token(1), token(2)), 2, 5)})
    bnf = normalise(g)
    assert sum(1 for t in bnf.terminals if isinstance(t, Token)) == 2
    with pytest.raises(GrammarError, match="max_grammar_rules"):
        normalise(Grammar({"root": rep(seq(token(1), ref("root")), 0, 500)}), Limits(max_grammar_rules=100))


def test_a_repeat_of_a_lexeme_is_one_lexeme_only_while_small():
    item = literal(",abcdefghi")  # size 11: ten characters and their concatenation
    assert isinstance(rep(item, 0, 10), Lex)
    assert isinstance(rep(Lex(rx.char_class([(97, 122)])), 0, 10_000), Lex)  # a chain of states
    large = rep(item, 0, INLINE_REGEX_SIZE // 10)
    assert not isinstance(large, Lex)
    # Past the size the parser counts: the copies are helper rules over the one small lexeme.
    bnf = normalise(Grammar({"root": seq(literal("["), large, literal("]"))}))
    assert max(rx.size(t.regex) for t in bnf.terminals if isinstance(t, Lex)) <= 11


def test_unproductive_productions_are_dropped():
    g = Grammar({"root": alt(literal("a"), ref("loop")), "loop": seq(literal("b"), ref("loop"))})
    bnf = normalise(g)
    used = {s for _, rhs in bnf.productions for s in rhs if s < 0}
    assert [bnf.terminals[terminal_symbol(s)] for s in used] == [Lex(rx.literal("a"))]
