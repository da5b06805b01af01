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


@given(_TREES, st.randoms())
def test_equal_trees_hash_alike_whichever_node_is_hashed_first(tree, random):
    # A node's hash is computed when first asked for: from the root down on one copy, and from
    # some inner nodes up on the other, it must come out the same, and find the tree in a dict.
    inner = _rebuilt(tree)
    nodes = [inner]
    for node in nodes:
        nodes.extend(rx._children(node))
    for node in random.sample(nodes, len(nodes) // 2):
        hash(node)
    assert hash(inner) == hash(tree)
    assert {tree: 1}[inner] == 1


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


@given(st.lists(st.text("ab\u00e9", max_size=4), max_size=6))
def test_strings_of_words_are_the_words(texts):
    assert rx.strings(rx.words(texts), 100) == frozenset(texts)


def test_strings_of_finite_trees():
    hex_digit = rx.char_class([(48, 57), (65, 70), (97, 102)])
    assert rx.strings(rx.concat(rx.literal("x"), rx.repeat(rx.char_class([(48, 49)]), 0, 2)), 100) == {
        "x", "x0", "x1", "x00", "x01", "x10", "x11",
    }  # fmt: skip
    assert len(rx.strings(rx.concat(hex_digit, hex_digit), 1000)) == 22 * 22
    assert rx.strings(rx.char_class([(0xD7FF, 0xE000)]), 100) == {"\ud7ff", "\ue000"}  # no surrogates
    assert rx.strings(rx.EMPTY, 1) == {""} and rx.strings(rx.NOTHING, 1) == frozenset()


def test_strings_refuses_what_is_infinite_or_too_many():
    assert rx.strings(rx.star(rx.literal("a")), 100) is None
    assert rx.strings(rx.char_class([(0, 1000)]), 10_000) is None  # a class of many characters
    assert rx.strings(rx.repeat(rx.char_class([(48, 57)]), 4, 4), 1000) is None  # 10,000 strings
    assert rx.strings(rx.difference(rx.literal("a"), rx.literal("b")), 100) is None
    deep = rx.literal("a")
    for _ in range(5000):
        deep = rx.alt(rx.concat(rx.literal("b"), deep), rx.literal("c"))
    assert rx.strings(deep, 100) is None  # without recursion, over the limit
