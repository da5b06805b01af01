"""`TokenTrie` against a brute-force Python build on real vocabularies."""

import bisect
import time
from collections import Counter

import numpy as np
import pytest

from grammask import assets
from grammask.vocab import TokenTrie, Vocabulary


def text_tokens(vocab: Vocabulary) -> dict[int, bytes]:
    return {i: b for i, b in enumerate(vocab.token_bytes) if b and not vocab.is_special[i]}


def node_prefixes(trie: TokenTrie) -> list[bytes]:
    """The prefix each node stands for, from the parent/byte arrays (parents come first)."""
    prefixes = [b""]
    for node in range(1, trie.n_nodes):
        assert 0 <= trie.parent[node] < node
        prefixes.append(prefixes[trie.parent[node]] + bytes([trie.byte[node]]))
    return prefixes


def check_against_brute_force(vocab: Vocabulary) -> None:
    trie = vocab.trie
    tokens = text_tokens(vocab)
    starting_with = Counter(t[:k] for t in tokens.values() for k in range(len(t) + 1))
    ending_at = Counter(tokens.values())
    prefixes = node_prefixes(trie)

    # Same node set: every prefix of a text token, once.
    assert len(prefixes) == trie.n_nodes == len(starting_with)
    assert set(prefixes) == set(starting_with)
    assert trie.max_len == max(map(len, tokens.values()))

    # BFS order, by (parent, byte) within a depth; depth_start delimits the depths.
    depth = trie.depth.astype(np.int64)
    assert depth.tolist() == [len(p) for p in prefixes]
    assert trie.parent[0] == -1 and trie.byte[0] == -1
    order = list(zip(depth[1:].tolist(), trie.parent[1:].tolist(), trie.byte[1:].tolist(), strict=True))
    assert order == sorted(order) and len(set(order)) == len(order)
    assert trie.depth_start.tolist() == [int(np.searchsorted(depth, d)) for d in range(trie.max_len + 2)]

    # Tokens by bytes (ties by id), and each node's range of tokens below it.
    expected_sorted = sorted(tokens, key=lambda i: (tokens[i], i))
    assert trie.sorted_tokens.tolist() == expected_sorted
    sorted_bytes = [tokens[i] for i in expected_sorted]
    for node, prefix in enumerate(prefixes):
        lo, hi = int(trie.node_lo[node]), int(trie.node_hi[node])
        assert lo == bisect.bisect_left(sorted_bytes, prefix)
        assert hi - lo == starting_with[prefix]
        assert trie.node_end_count[node] == ending_at[prefix]
        assert all(sorted_bytes[k] == prefix for k in range(lo, lo + ending_at[prefix]))

    # Token -> node and token -> bytes; excluded ids map nowhere.
    for t in range(vocab.size):
        if t in tokens:
            assert prefixes[trie.token_node[t]] == tokens[t]
            assert trie.token_bytes(t) == tokens[t]
        else:
            assert trie.token_node[t] == -1 and trie.token_len[t] == 0
    assert len(trie.token_node) == len(trie.token_start) == len(trie.token_len) == vocab.size


@pytest.mark.parametrize("fixture", ["vocab_llama_spm", "vocab_gpt2"])
def test_matches_brute_force(request, fixture):
    check_against_brute_force(request.getfixturevalue(fixture))


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["vocab_llama3", "vocab_qwen2", "vocab_gemma4"])
def test_matches_brute_force_large(request, fixture):
    check_against_brute_force(request.getfixturevalue(fixture))


def test_duplicate_bytes_share_a_node(vocab_llama_spm):
    """Llama 2's `▁` and its byte-fallback `<0x20>` are both a single space."""
    trie = vocab_llama_spm.trie
    space = trie.node_of_prefix(b" ")
    twins = [t for t in range(vocab_llama_spm.size) if trie.token_node[t] == space]
    assert len(twins) == 2 and {vocab_llama_spm.token_bytes[t] for t in twins} == {b" "}
    assert trie.node_end_count[space] == 2
    lo = trie.node_lo[space]
    assert trie.sorted_tokens[lo : lo + 2].tolist() == sorted(twins)


def test_specials_and_padding_are_not_in_the_trie(vocab_llama3):
    wide = vocab_llama3.with_size(128_512)
    trie = wide.trie
    assert (trie.token_node[wide.special_ids] == -1).all()
    assert (trie.token_node[128_256:] == -1).all() and (trie.token_len[128_256:] == 0).all()
    assert len(trie.sorted_tokens) == 128_000
    assert trie.node_hi[0] - trie.node_lo[0] == 128_000
    assert trie.node_of_prefix(b"<|eot_id|>") == -1  # only its pieces exist as text: no node
    assert trie.n_nodes == vocab_llama3.trie.n_nodes


def test_node_of_prefix(vocab_llama3):
    trie = vocab_llama3.trie
    assert trie.node_of_prefix(b"") == 0
    hello = vocab_llama3.token_id(" hello")
    assert trie.node_of_prefix(b" hello") == trie.token_node[hello]
    node = trie.node_of_prefix(b" hel")
    rank = np.flatnonzero(trie.sorted_tokens == hello)[0]
    assert trie.depth[node] == 4 and trie.node_lo[node] <= rank < trie.node_hi[node]
    assert trie.node_of_prefix(b"\xff\xff\xff") == -1
    longest = max(range(vocab_llama3.size), key=lambda t: trie.token_len[t])
    assert trie.node_of_prefix(trie.token_bytes(longest)) == trie.token_node[longest]
    assert trie.node_of_prefix(trie.token_bytes(longest) + b"x") == -1


def test_small_vocabulary_edge_cases():
    vocab = Vocabulary([b"ab", b"a", b"", b"<s>", b"ab", b"b\x00", b"b"], special_ids=[3], size=9)
    trie = vocab.trie
    assert node_prefixes(trie) == [b"", b"a", b"b", b"ab", b"b\x00"]
    assert trie.sorted_tokens.tolist() == [1, 0, 4, 6, 5]
    assert trie.token_node.tolist() == [3, 1, -1, -1, 3, 4, 2, -1, -1]
    assert trie.node_lo.tolist() == [0, 0, 3, 1, 4] and trie.node_hi.tolist() == [5, 3, 5, 3, 5]
    assert trie.node_end_count.tolist() == [0, 1, 1, 2, 1]
    check_against_brute_force(vocab)


def test_no_text_tokens():
    trie = Vocabulary([b"<s>", b""], special_ids=[0]).trie
    assert trie.n_nodes == 1 and trie.max_len == 0 and len(trie.sorted_tokens) == 0
    assert trie.depth_start.tolist() == [0, 1]
    assert trie.node_lo.tolist() == [0] and trie.node_hi.tolist() == [0]
    assert trie.node_of_prefix(b"a") == -1


def test_arrays_are_read_only(vocab_gpt2):
    with pytest.raises(ValueError):
        vocab_gpt2.trie.token_node[0] = 5


def test_build_time():
    """Target 0.2 s for Llama 3's 128k tokens; the bound leaves room for a busy machine."""
    vocab = Vocabulary.from_gguf(assets.vocab_gguf_path("llama-bpe"))
    start = time.perf_counter()
    TokenTrie(vocab)
    assert time.perf_counter() - start < 1.0
