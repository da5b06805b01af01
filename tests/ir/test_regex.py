"""The regex constructors of `grammask.ir.regex`."""

from __future__ import annotations

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
