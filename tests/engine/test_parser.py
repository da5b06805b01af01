"""The Earley parser over lexemes, checked on whole texts (no vocabulary)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammask.engine.parser import Config, Parser, following_lexemes, nullable_nonterminals
from grammask.engine.recognize import accepts, accepts_prefix, parser_for
from grammask.errors import GrammarError
from grammask.ir import regex as rx
from grammask.ir.grammar import Grammar, alt, lex, literal, opt, plus, ref, rep, seq, star
from grammask.ir.normalise import normalise
from grammask.limits import Limits

DIGITS = lex(rx.plus(rx.char_class([(ord("0"), ord("9"))])))


def nested_lists() -> Grammar:
    """`[1,[2,3],[]]`-style lists of numbers, any depth."""
    item = alt(DIGITS, ref("list"))
    return Grammar(
        {"list": seq(literal("["), opt(seq(item, star(seq(literal(","), item)))), literal("]"))}, start="list"
    )


@pytest.mark.parametrize(
    ("grammar", "good", "bad"),
    [
        (nested_lists(), ["[]", "[1]", "[1,[2,3],[]]", "[[[[]]]]"], ["", "[", "[1,]", "[1]]", "[,1]", "1"]),
        # Left recursion and an ε-rule.
        (
            Grammar(
                {
                    "e": alt(seq(ref("e"), literal("+"), DIGITS), DIGITS),
                    "root": seq(ref("e"), ref("sp")),
                    "sp": alt(seq(), literal(" ")),
                }
            ),
            ["1", "1+2", "1+2+33 "],
            ["+", "1+", "1 +2", "1  "],
        ),
        # Ambiguous grammar: any split of the a's.
        (Grammar({"root": seq(ref("as"), ref("as")), "as": plus(literal("a"))}), ["aa", "aaaa"], ["a", "", "aab"]),
        # Lexeme boundaries inside a run of letters: "ab" could be one lexeme or two.
        (Grammar({"root": seq(star(literal("ab")), literal("abc"))}), ["abc", "ababc"], ["ab", "abab", "abcab"]),
        # Bounded repeats of a non-regular item.
        (
            Grammar({"root": rep(ref("p"), 2, 3), "p": seq(literal("("), opt(ref("p")), literal(")"))}),
            ["()()", "(())()()"],
            ["()", "()()()()"],
        ),
    ],
)
def test_accepts(grammar, good, bad):
    parser = parser_for(grammar)
    for text in good:
        assert accepts(parser, text), text
    for text in bad:
        assert not accepts(parser, text), text


def test_sets_that_differ_only_in_completed_items_are_one():
    """What an Earley set can still do depends on its waiting items alone: the parse after the
    second, third or a nested member of a list is one config, though each completed another item
    (its masks and successors are then computed once for all of them)."""
    parser = parser_for(nested_lists())
    after = [parser.step_bytes(parser.initial, text.encode()) for text in ("[1,22,", "[1,22,3,", "[1,[2,[]],")]
    assert after[0] is not None
    assert after[0] is after[1] is after[2]


def test_prefixes_of_sentences_are_prefixes():
    parser = parser_for(nested_lists())
    sentence = "[1,[22,[3]],[]]"
    for cut in range(len(sentence) + 1):
        assert accepts_prefix(parser, sentence[:cut])
    assert not accepts_prefix(parser, "[1,]")
    assert not accepts_prefix(parser, "]")


def test_recursion_is_unbounded():
    parser = parser_for(nested_lists())
    deep = "[" * 200 + "1" + "]" * 200
    assert accepts(parser, deep)
    assert not accepts(parser, deep + "]")
    assert accepts_prefix(parser, "[" * 1000)


def test_unproductive_grammar_is_rejected():
    with pytest.raises(GrammarError, match="accepts no text"):
        parser_for(Grammar({"root": seq(literal("a"), ref("root"))}))


def test_prefix_never_dead_ends():
    # `b` can never complete, so "a" must not count as a prefix of the language.
    grammar = Grammar({"root": alt(seq(literal("a"), ref("b")), literal("c")), "b": seq(literal("b"), ref("b"))})
    assert not accepts_prefix(grammar, "a")
    assert accepts(grammar, "c")


_RUNS = parser_for(Grammar({"root": seq(star(literal("ab")), literal("abc"))}))
_LISTS = parser_for(nested_lists())


def _at_once_and_one_by_one(parser: Parser, data: bytes) -> tuple[Config | None, Config | None]:
    """The configs after `data` stepped at once and one byte at a time (each byte the last of
    its text, so every lexeme that may end there is completed)."""
    one_by_one: Config | None = parser.initial
    for byte in data:
        one_by_one = parser.step_bytes(one_by_one, bytes([byte]))
        if one_by_one is None:
            break
    return parser.step_bytes(parser.initial, data), one_by_one


@settings(max_examples=300, deadline=None)
@given(st.text("abc", max_size=12))
def test_stepping_bytes_agrees_with_re_at_once_and_one_by_one(text: str) -> None:
    # Several bytes at once take a shortcut while one lexeme stays alive and none ends ("a" of
    # "ab" and "abc"); they must reach the config (hash-consed: the same object) that the bytes
    # reach one at a time, and accept what Python's `re` does.
    at_once, one_by_one = _at_once_and_one_by_one(_RUNS, text.encode())
    assert at_once is one_by_one
    assert (at_once is not None and at_once.accepting) == bool(re.fullmatch("(ab)*abc", text))


@settings(max_examples=300, deadline=None)
@given(st.text("[]1,2", max_size=14))
def test_lexemes_completed_only_where_text_may_follow_reach_the_same_config(text: str) -> None:
    # Bytes stepped at once complete a lexeme only where the next byte may begin a lexeme after
    # it; one byte at a time, every lexeme that may end is completed. Both reach one config.
    at_once, one_by_one = _at_once_and_one_by_one(_LISTS, text.encode())
    assert at_once is one_by_one


def test_a_lexeme_is_completed_only_where_text_may_go_on_after_it() -> None:
    # "[", then a number that could end after each digit; but a digit cannot follow a number, so
    # only the last digit completes it.
    parser = parser_for(nested_lists())
    completed = []
    complete = parser.complete
    parser.complete = lambda earley_set, terminals: completed.append(terminals) or complete(earley_set, terminals)  # type: ignore[method-assign]
    after = parser.step_bytes(parser.initial, b"[12345")
    assert after is not None and len(completed) == 2
    assert parser.step_bytes(after, b"]") is not None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(-2, 5), max_size=3).map(tuple)), min_size=1, max_size=14)
)
def test_nullable_nonterminals_are_the_least_fixpoint(productions: list[tuple[int, tuple[int, ...]]]) -> None:
    lhs = [a for a, _ in productions]
    rhs = [b for _, b in productions]
    expected = [False] * 6
    changed = True
    while changed:  # the definition, iterated to a fixpoint
        changed = False
        for a, body in productions:
            if not expected[a] and all(s >= 0 and expected[s] for s in body):
                expected[a] = changed = True
    assert nullable_nonterminals(lhs, rhs, 6) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.lists(st.integers(-3, 4), max_size=3).map(tuple)), min_size=1, max_size=12)
)
def test_following_lexemes_hold_every_pair_a_sentence_has(productions: list[tuple[int, tuple[int, ...]]]) -> None:
    """Terminals 0 and 1 are lexemes, 2 a special token. Every two lexemes side by side in a
    sentence of up to 5 terminals are in the follow sets (what masks need: a boundary is never
    skipped that text can cross), and the sets are those of the textbook fixpoint."""
    lhs = [a for a, _ in productions]
    rhs = [b for _, b in productions]
    nullable = nullable_nonterminals(lhs, rhs, 5)
    follows = following_lexemes(lhs, rhs, nullable, [True, True, False])
    # The sentences of each nonterminal, up to 5 terminals long, to a fixpoint.
    sentences: list[set[tuple[int, ...]]] = [set() for _ in range(5)]
    changed = True
    while changed:
        changed = False
        for a, body in productions:
            made: set[tuple[int, ...]] = {()}
            for symbol in body:
                parts = [(-1 - symbol,)] if symbol < 0 else sentences[symbol]
                made = {x + y for x in made for y in parts if len(x) + len(y) <= 5}
            if not made <= sentences[a]:
                sentences[a] |= made
                changed = True
    for sentence in sentences[0]:
        for k, j in zip(sentence, sentence[1:], strict=False):
            if j < 2:
                assert j in follows[k], (sentence, follows)
    # The textbook definition: FIRST, then FOLLOW, each iterated to a fixpoint.
    first: list[set[int]] = [set() for _ in range(5)]
    follow: list[set[int]] = [set() for _ in range(5)]
    terminal_follow: list[set[int]] = [set() for _ in range(3)]

    def begins(rest: tuple[int, ...]) -> tuple[set[int], bool]:
        found: set[int] = set()
        for symbol in rest:
            if symbol < 0:
                return found | {-1 - symbol}, False
            found |= first[symbol]
            if not nullable[symbol]:
                return found, False
        return found, True

    changed = True
    while changed:
        before = [set(x) for x in first + follow + terminal_follow]
        for a, body in productions:
            first[a] |= begins(body)[0]
            for i, symbol in enumerate(body):
                found, open_end = begins(body[i + 1 :])
                target = terminal_follow[-1 - symbol] if symbol < 0 else follow[symbol]
                target |= found | (follow[a] if open_end else set())
        changed = before != [set(x) for x in first + follow + terminal_follow]
    assert [set(found) for found in follows] == [found - {2} for found in terminal_follow]


def test_a_lexeme_over_a_limit_names_its_rules() -> None:
    """The error says which rules of the grammar the lexeme comes from, through the helper rules
    that normalising makes for repetitions."""
    letter = rx.char_class([(97, 122)])
    big = lex(rx.concat(rx.star(letter), rx.literal("a"), rx.repeat(letter, 12, 12)))  # 2^13 states
    grammar = Grammar(
        {
            "root": seq(literal("x"), star(seq(ref("item"), literal(","))), literal("y")),
            "item": alt(big, seq(literal("("), ref("root"), literal(")"))),
        }
    )
    parser = parser_for(grammar, Limits(max_dfa_states=1000))
    with pytest.raises(GrammarError, match=r"^in the lexeme of rule 'item': regex needs a DFA with more than"):
        parser.compile_lexemes()
    bnf = normalise(grammar)
    comma = next(k for k, term in enumerate(bnf.terminals) if term == lex(rx.literal(",")))
    assert parser.rules_using(comma) == ["root"]  # used by the helper rule of `(item ",")*`
