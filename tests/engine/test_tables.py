import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammask.engine.tables import TrieIndex
from grammask.vocab import TokenTrie, Vocabulary


def _prefix(trie: TokenTrie, node: int) -> bytes:
    out = []
    while node > 0:
        out.append(int(trie.byte[node]))
        node = int(trie.parent[node])
    return bytes(reversed(out))


def _check_preorder(vocab: Vocabulary, nodes: np.ndarray | None = None) -> None:
    """Every position's subtree, tokens and byte sets, against the trie's own (breadth-first) nodes."""
    trie = vocab.trie
    index = TrieIndex.of(trie)
    pre = index.preorder
    prefixes = [_prefix(trie, n) for n in pre.node.tolist()]
    byte, depth, classes = pre.field("byte"), pre.field("depth"), pre.field("classes")
    end = pre.field("size") + np.arange(trie.n_nodes)
    assert sorted(pre.node.tolist()) == list(range(trie.n_nodes))
    assert np.array_equal(pre.node[pre.position], np.arange(trie.n_nodes))
    assert prefixes == sorted(prefixes)  # preorder is the order of the prefixes
    assert depth.tolist() == [len(p) for p in prefixes]
    tokens = trie.sorted_tokens
    for at in range(trie.n_nodes) if nodes is None else nodes.tolist():
        node, prefix = int(pre.node[at]), prefixes[at]
        below = prefixes[at + 1 : end[at]]
        assert all(p.startswith(prefix) and p != prefix for p in below)
        assert end[at] == len(prefixes) or not prefixes[end[at]].startswith(prefix)
        ending = {vocab.token_bytes[t] for t in tokens[pre.end_lo[at] : pre.end_hi[at]].tolist()}
        assert ending <= {prefix} and len(ending) == int(trie.node_end_count[node] > 0)
        count = pre.end_hi[at] - pre.end_lo[at]
        single = int(tokens[pre.end_lo[at]]) if count == 1 else None
        assert pre.token[at] == {0: -1, 1: single}.get(count, -2)
        under = [vocab.token_bytes[t] for t in tokens[pre.end_hi[at] : pre.below_hi[at]].tolist()]
        assert all(t.startswith(prefix) and len(t) > len(prefix) for t in under)
        assert not prefix or byte[at] == prefix[-1]
        assert pre.below_hi[at] - pre.end_lo[at] == trie.node_hi[node] - trie.node_lo[node]
        byte_set = {b for p in below for b in p[len(prefix) :]}
        bits = np.unpackbits(pre.below_bytes[at].view(np.uint8), bitorder="little")
        assert set(np.flatnonzero(bits).tolist()) == byte_set
        assert classes[at] == sum(1 << c for c in {b >> 4 for b in byte_set})
    children = [at for at in range(1, trie.n_nodes) if depth[at] == 1]
    assert pre.root_children.tolist() == children
    assert pre.root_bytes.tolist() == [prefixes[at][0] for at in children]


def test_preorder_of_a_real_vocabulary(vocab_llama3):
    """Llama 3's trie in preorder: every 997th position checked whole, the order everywhere."""
    _check_preorder(vocab_llama3, np.arange(0, vocab_llama3.trie.n_nodes, 997))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=5), min_size=1, max_size=40))
def test_preorder_of_any_vocabulary(pieces):
    """Duplicated tokens, prefixes of each other, bytes of every class: each position's subtree is
    the run of positions up to its `end`, and its sets are the bytes below it."""
    _check_preorder(Vocabulary(pieces))


def test_a_vocabulary_the_layout_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="depth up to 4096"):
        TrieIndex.of(Vocabulary([b"x" * 4096]).trie)


def test_preorder_of_a_vocabulary_without_text_tokens():
    pre = TrieIndex.of(Vocabulary([b"<s>"], special_ids=[0]).trie).preorder
    assert pre.node.tolist() == [0] and pre.field("size").tolist() == [1]


@pytest.mark.parametrize("data", [b"a", b"ab", b"\x00\xff"])
def test_below_classes_hold_the_run_of_each_byte(data):
    pre = TrieIndex.of(Vocabulary([data]).trie).preorder
    assert pre.field("classes")[0] == sum(1 << c for c in {b >> 4 for b in data})
