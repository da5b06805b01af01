"""The regex constructors of `grammask.ir.regex`."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from grammask.ir import regex as rx


@given(st.lists(st.text(alphabet="abé", max_size=4), max_size=6), st.randoms())
def test_words_make_one_tree_whatever_their_order(texts, random):
    # The keys an object may add are "any string but these names", and the names come from a
    # set: a tree that depended on their order would differ between processes (hash seeds).
    shuffled = list(texts)
    random.shuffle(shuffled)
    assert rx.words(shuffled) == rx.words(texts)
    assert rx.words(set(texts)) == rx.words(texts)


# Trees from the node classes themselves, not the simplifying constructors: nested concatenations,
# equal trees built apart and shared subtrees all appear.
_CLASSES = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), max_size=2).map(
    lambda pairs: rx.CharClass(tuple((lo, lo + width) for lo, width in pairs))
)
_TREES = st.recursive(
    _CLASSES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda items: rx.Concat(tuple(items))),
        st.lists(inner, min_size=2, max_size=3).map(lambda items: rx.Alt(tuple(items))),
        st.tuples(inner, st.integers(0, 2), st.sampled_from([None, 1, 2])).map(lambda t: rx.Repeat(*t)),
        st.tuples(inner, inner).map(lambda t: rx.Difference(*t)),
    ),
    max_leaves=6,
)


def _rebuilt(node: rx.RegexNode) -> rx.RegexNode:
    """An equal tree of new objects (no number on any of them yet)."""
    if isinstance(node, rx.CharClass):
        return rx.CharClass(node.ranges)
    if isinstance(node, rx.Concat | rx.Alt):
        return type(node)(tuple(map(_rebuilt, node.items)))
    if isinstance(node, rx.Repeat):
        return rx.Repeat(_rebuilt(node.item), node.min, node.max)
    return rx.Difference(_rebuilt(node.left), _rebuilt(node.right))


@given(_TREES, _TREES)
def test_ident_names_a_tree_exactly(a, b):
    # The DFA cache is keyed by these numbers: one shared by unequal trees would be a wrong DFA.
    assert (rx.ident(a) == rx.ident(b)) == (a == b)
    assert rx.ident(_rebuilt(a)) == rx.ident(a)


def test_ident_never_gives_a_number_twice(monkeypatch):
    # Past its bound the table starts again empty: equal trees may then get new numbers (a cache
    # miss), but an old number must never come to name another tree.
    monkeypatch.setattr(rx, "_IDS", {})
    monkeypatch.setattr(rx, "_MAX_IDS", 4)
    trees = [rx.literal(text) for text in ("ab", "ba", "abc", "cab", "ab", "bca")]
    numbers = [rx.ident(tree) for tree in trees]
    assert len(rx._IDS) <= 4
    for (x, m), (y, n) in itertools.combinations(zip(trees, numbers, strict=True), 2):
        assert m != n or x == y


def test_ident_numbers_deep_trees_without_recursion():
    deep: rx.RegexNode = rx.char_class([(97, 97)])
    for _ in range(50_000):
        deep = rx.Repeat(deep, 0, 1)
    assert rx.ident(deep) == rx.ident(deep) > 0
