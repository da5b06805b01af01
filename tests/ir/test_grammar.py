"""`Grammar.canonical`: an exact text of a grammar, the compile cache's key."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grammask.ir import grammar as g
from grammask.ir import regex as rx

# A small space, so that equal expressions built separately come up often. The classes are
# built directly (not through the simplifying builders) so that every shape occurs.
_regexes = st.recursive(
    st.sampled_from([rx.CharClass(((97, 97),)), rx.CharClass(((97, 98),)), rx.CharClass(())]),
    lambda inner: st.one_of(
        st.builds(lambda items: rx.Concat(tuple(items)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda items: rx.Alt(tuple(items)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(rx.Repeat, inner, st.sampled_from([0, 1]), st.sampled_from([1, 2, None])),
        st.builds(rx.Difference, inner, inner),
    ),
    max_leaves=4,
)
_exprs = st.recursive(
    st.one_of(
        st.builds(g.Lex, _regexes),
        st.builds(g.Ref, st.sampled_from(["root", "x"])),
        st.builds(g.Token, st.sampled_from(["1", 1, "<eos>"])),
    ),
    lambda inner: st.one_of(
        st.builds(lambda items: g.Seq(tuple(items)), st.lists(inner, max_size=3)),
        st.builds(lambda items: g.Alt(tuple(items)), st.lists(inner, max_size=3)),
        st.builds(g.Rep, inner, st.sampled_from([0, 2]), st.sampled_from([2, None])),
    ),
    max_leaves=5,
)


def _grammar(body: g.Expr, x: g.Expr = g.EMPTY_SEQ) -> g.Grammar:
    return g.Grammar({"root": body, "x": x})


@given(st.lists(_exprs, min_size=2, max_size=8), _exprs)
def test_equal_texts_exactly_for_equal_grammars(exprs, other):
    for a in exprs:
        for b in exprs:
            assert (_grammar(a, other).canonical() == _grammar(b, other).canonical()) == (a == b)
            assert (_grammar(other, a).canonical() == _grammar(other, b).canonical()) == (a == b)


def test_every_field_counts():
    a, b = rx.CharClass(((97, 97),)), rx.CharClass(((97, 98),))
    x, y = g.Lex(a), g.Token(1)
    variants = [
        g.Lex(rx.Repeat(a, 0, 2)),
        g.Lex(rx.Repeat(a, 0, None)),
        g.Lex(rx.Repeat(a, 1, 2)),
        g.Lex(rx.Repeat(b, 0, 2)),
        g.Lex(rx.Concat((a, b))),
        g.Lex(rx.Concat((b, a))),
        g.Lex(rx.Alt((a, b))),
        g.Lex(rx.Difference(a, b)),
        g.Lex(rx.Difference(b, a)),
        g.Alt((g.Lex(a), g.Lex(b))),
        g.Seq((x, y)),
        g.Seq((y, x)),
        g.Alt((x, y)),
        g.Rep(x, 0, 2),
        g.Rep(x, 0, None),
        g.Rep(x, 1, 2),
        g.Token("1"),
        g.Ref("x"),
        g.Lex(rx.CharClass(())),
    ]
    assert len({_grammar(v).canonical() for v in variants}) == len(variants)


def test_sharing_does_not_change_the_text():
    def word() -> rx.RegexNode:
        return rx.Concat((rx.CharClass(((97, 97),)), rx.Repeat(rx.CharClass(((98, 99),)), 0, None)))

    shared = word()
    once = g.Lex(rx.Alt((shared, rx.Concat((shared, shared)))))
    apart = g.Lex(rx.Alt((word(), rx.Concat((word(), word())))))
    assert once == apart
    assert _grammar(once).canonical() == _grammar(apart).canonical()


def test_names_start_and_warnings_count_and_rule_order_does_not():
    base = g.Grammar({"root": g.Ref("a"), "a": g.literal("x")})
    texts = {
        base.canonical(),
        g.Grammar({"root": g.Ref("b"), "b": g.literal("x")}).canonical(),
        g.Grammar({"root": g.Ref("a"), "a": g.literal("x")}, start="a").canonical(),
        g.Grammar({"root": g.Ref("a"), "a": g.literal("x")}, warnings=["dropped format"]).canonical(),
        g.Grammar({"root": g.Ref("a"), "a": g.Token("x")}).canonical(),
    }
    assert len(texts) == 5
    assert base.canonical() == g.Grammar({"a": g.literal("x"), "root": g.Ref("a")}).canonical()


def test_a_deep_grammar_needs_no_recursion():
    body: g.Expr = g.literal("x")
    regex: rx.RegexNode = rx.CharClass(((97, 97),))
    for _ in range(100_000):
        body = g.Seq((g.Token(1), body))
        regex = rx.Concat((regex, rx.CharClass(((98, 98),))))
    text = _grammar(body, g.Lex(regex)).canonical()
    assert text.count("('seq', ") == 100_000  # one record per distinct sequence
