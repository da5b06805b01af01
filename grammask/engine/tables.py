"""Per-vocabulary tables of the mask computation, built once per vocabulary and shared by every
grammar compiled for it: the token trie's derived arrays (`TrieIndex`) and the token slices.

Building them also compiles the numba kernels (`grammask.engine.kernels`, and the lexeme join of
`grammask.automata.concat`), when numba is there, so that no decoding step or first compile pays
for it.

A *token slice* is a class of tokens fixed by a language: here, the tokens whose text is JSON
string content (no `"`, `\\` or control character; complete UTF-8 characters), of any length or of
at most a few bytes. Most of a large vocabulary is in each. Where a lexer state lets every text of
the slice's language through (inside an unconstrained JSON string, for one, or with at least that
many characters left under a `maxLength`), all of the slice's tokens are allowed at once by OR-ing
its precomputed mask, and the trie walk covers only the rest of the vocabulary, a much smaller trie.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from grammask.automata import concat
from grammask.automata.compile import compile_regex
from grammask.automata.dfa import ByteDFA
from grammask.engine import kernels
from grammask.ir import regex as rx
from grammask.lru import LRUCache
from grammask.vocab import TokenTrie, Vocabulary

__all__ = ["TokenSlice", "TrieIndex", "VocabTables", "tables_for"]

#: JSON string content as grammars write it: any character but `"`, `\`, the controls below
#: U+0020 and DEL. JSON allows DEL, but many grammars leave it out (llama.cpp's json.gbnf does): a
#: slice without it serves both, and the few tokens with DEL are walked.
JSON_STRING_CHARS = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E), (0x80, 0xD7FF), (0xE000, 0x10FFFF))


#: Byte-length bounds of the bounded JSON-string slices, longest first (a slice of any length
#: comes before them). With Llama 3's vocabulary, 99% and 78% of the string-content tokens.
SLICE_BOUNDS = (16, 8)

#: Levels of the trie smaller than this are walked in Python, depth first (see `TrieIndex`).
_TAIL_LEVEL = 384

#: Bytes of the walks through single lexemes that a vocabulary keeps for every grammar compiled
#: for it (`VocabTables.walks`): about 4,000 of Llama 3's 16 KiB masks.
SHARED_WALK_BYTES = 64 << 20


@dataclass(frozen=True)
class TrieIndex:
    """Arrays derived from a token trie that every walk over it uses."""

    trie: TokenTrie
    first_child: np.ndarray  # children of node n: first_child[n]:child_end[n] (contiguous by layout)
    child_end: np.ndarray
    below_lo: np.ndarray  # sorted_tokens[below_lo[n]:below_hi[n]]: tokens strictly below n
    below_hi: np.ndarray
    end_lo: np.ndarray  # sorted_tokens[end_lo[n]:end_hi[n]]: tokens ending exactly at n
    end_hi: np.ndarray
    token_node: np.ndarray  # node of each token; n_nodes ("no node") for ids not in the trie
    parent: np.ndarray
    byte: np.ndarray
    has_below: np.ndarray
    #: the same trie in preorder, for the compiled walk
    preorder: Preorder
    #: From this depth on every level is small: walks go on depth first in Python (no per-level
    #: numpy overhead), with the nodes from `tail_base` on as Python lists.
    tail_depth: int
    tail_base: int
    tail_first_child: list[int]
    tail_child_end: list[int]
    tail_byte: list[int]

    @classmethod
    def of(cls, trie: TokenTrie) -> TrieIndex:
        counts = np.bincount(trie.parent[1:], minlength=trie.n_nodes)
        child_end = np.cumsum(counts) + 1
        first_child = child_end - counts
        end_lo = trie.node_lo.astype(np.int64)
        sizes = np.diff(trie.depth_start)
        big = np.flatnonzero(sizes >= _TAIL_LEVEL)
        tail_depth = max(int(big[-1]) + 1 if big.size else 1, 1)
        tail_base = int(trie.depth_start[tail_depth - 1])
        return cls(
            trie=trie,
            first_child=first_child,
            child_end=child_end,
            below_lo=end_lo + trie.node_end_count,
            below_hi=trie.node_hi.astype(np.int64),
            end_lo=end_lo,
            end_hi=end_lo + trie.node_end_count,
            token_node=np.where(trie.token_node >= 0, trie.token_node, trie.n_nodes),
            parent=trie.parent.astype(np.int32),
            byte=trie.byte.astype(np.int32),
            has_below=trie.node_hi > trie.node_lo + trie.node_end_count,
            preorder=Preorder.of(trie, first_child),
            tail_depth=tail_depth,
            tail_base=tail_base,
            tail_first_child=first_child[tail_base:].tolist(),
            tail_child_end=child_end[tail_base:].tolist(),
            tail_byte=trie.byte[tail_base:].tolist(),
        )


@dataclass(frozen=True)
class Preorder:
    """A token trie's nodes in preorder (the order of their prefixes), for the compiled walk: a
    node and its subtree are a run of positions (as many as the record's size), so the walk reads
    every array front to back, skips a dead subtree with one jump, and keeps only the lexer state
    of each depth of the current path. Positions here; `node` maps them back to the trie's
    (breadth-first) nodes.

    What the walk reads at every position is packed into one int64, `record` (`kernels.RECORD`
    gives the layout): the edge's byte, the classes of the bytes below, the depth and the size
    of the subtree; and the token that ends there, if one does, is `token`. Two streams rather
    than six, read front to back: replayed walks took a fifth to a quarter less time."""

    node: np.ndarray  # int64: the trie node at each position
    #: int64: per position, the byte of its edge, the classes of the bytes below it (bit c set
    #: where a byte of `c * 16 .. c * 16 + 15` is: a cheap first test against a state's
    #: `Lexer.loop_classes`, which most subtrees fail), its depth and the size of its subtree
    record: np.ndarray
    #: int32: the token that ends at the position; -1 where none does, -2 where several do
    #: (tokens with the same bytes: `sorted_tokens[end_lo:end_hi]`)
    token: np.ndarray
    end_lo: np.ndarray  # int32: sorted_tokens[end_lo:end_hi] end at the node
    end_hi: np.ndarray  # int32
    below_hi: np.ndarray  # int32: sorted_tokens[end_hi:below_hi] are below it
    #: the bytes of every edge below the node, as a 256-bit set (four uint64 words): where a lexer
    #: state steps to itself on all of them, the whole subtree is alive at once
    below_bytes: np.ndarray
    #: int32 and uint8: the positions of the root's children, and their bytes (a walk reads them
    #: as one list rather than jump through the whole trie to find the few it needs)
    root_children: np.ndarray
    root_bytes: np.ndarray
    #: int32: the position of each trie node (to walk below given nodes)
    position: np.ndarray

    @classmethod
    def of(cls, trie: TokenTrie, first_child: np.ndarray) -> Preorder:
        # A node is made by the first token (in sorted order) with its prefix, `node_lo`; that
        # token makes its new prefixes by depth. So preorder is by (node_lo, depth), and a subtree
        # ends where the ranks of its tokens (`node_lo:node_hi`) end.
        order = np.lexsort((trie.depth, trie.node_lo))
        lo = trie.node_lo[order]
        below_bytes = _below_bytes(trie, first_child)[order]
        end = np.searchsorted(lo, trie.node_hi[order], side="left").astype(np.int64)
        end[0] = len(order)  # the root's subtree is everything (a trie without tokens has no ranks)
        byte = trie.byte[order].astype(np.uint8)  # (the root's -1 is never read)
        depth = trie.depth[order].astype(np.int64)
        root_children = np.flatnonzero(depth == 1).astype(np.int32)
        position = np.empty(len(order), dtype=np.int32)
        position[order] = np.arange(len(order), dtype=np.int32)
        ending = trie.node_end_count[order]
        sorted_tokens = trie.sorted_tokens
        token = np.full(len(order), -1, dtype=np.int32)
        token[ending > 1] = -2
        one = np.flatnonzero(ending == 1)
        token[one] = sorted_tokens[lo[one]]
        return cls(
            node=order.astype(np.int64),
            record=_records(byte, _classes(below_bytes), depth, end - np.arange(len(order))),
            token=token,
            end_lo=lo.astype(np.int32),
            end_hi=(lo + ending).astype(np.int32),
            below_hi=trie.node_hi[order].astype(np.int32),
            below_bytes=below_bytes,
            root_children=root_children,
            root_bytes=byte[root_children],
            position=position,
        )

    def field(self, name: str) -> np.ndarray:
        """int64: one field of every position's record, by its name in `kernels.RECORD` (`byte`,
        `classes`, `depth`, `size`)."""
        shift, bits = kernels.RECORD[name]
        return (self.record >> shift) & ((1 << bits) - 1)


def _records(byte: np.ndarray, classes: np.ndarray, depth: np.ndarray, size: np.ndarray) -> np.ndarray:
    """`Preorder.record` of each position. Raises `ValueError` for a vocabulary whose trie the
    layout cannot hold (a token of more than 4,095 bytes, or 2**27 nodes)."""
    fields = {"byte": byte, "classes": classes, "depth": depth, "size": size}
    record = np.zeros(len(byte), dtype=np.int64)
    for name, values in fields.items():
        shift, bits = kernels.RECORD[name]
        if len(values) and int(values.max()) >= 1 << bits:
            raise ValueError(f"vocabulary too large for the token trie's layout: {name} up to {int(values.max())}")
        record |= values.astype(np.int64) << shift
    return record


def _classes(byte_sets: np.ndarray) -> np.ndarray:
    """Per 256-bit byte set, bit c set where it holds a byte of `c * 16 .. c * 16 + 15`."""
    found = np.zeros(len(byte_sets), dtype=np.int32)
    for c in range(16):  # run c: bits (c % 4) * 16 .. + 15 of word c // 4
        run = (byte_sets[:, c // 4] >> np.uint64(c % 4 * 16)) & np.uint64(0xFFFF)
        found |= (run != 0).astype(np.int32) << c
    return found


def _below_bytes(trie: TokenTrie, first_child: np.ndarray) -> np.ndarray:
    """Per node, the set of bytes on the edges below it (`Preorder.below_bytes`), deepest level
    first: a node's set is its children's bytes and their sets."""
    found = np.zeros((trie.n_nodes, 4), dtype=np.uint64)
    bounds = trie.depth_start
    for depth in range(len(bounds) - 2, 0, -1):  # the nodes of `depth` and their parents above
        lo, hi = int(bounds[depth]), int(bounds[depth + 1])
        if lo == hi:
            continue
        edges = found[lo:hi].copy()
        byte = trie.byte[lo:hi].astype(np.int64)
        edges[np.arange(hi - lo), byte >> 6] |= np.left_shift(np.uint64(1), (byte & 63).astype(np.uint64))
        parents = np.unique(trie.parent[lo:hi])  # children are contiguous, in their parents' order
        found[parents] = np.bitwise_or.reduceat(edges, first_child[parents] - lo, axis=0)
    return found


@dataclass(frozen=True)
class TokenSlice:
    """The tokens whose whole text is in `dfa`'s language (and at most `max_len` bytes long, when
    given), and the trie of all other tokens."""

    dfa: ByteDFA
    max_len: int | None
    mask: np.ndarray  # packed int32: the slice's tokens
    rest: TrieIndex  # the trie of the text tokens outside the slice
    #: per DFA state, the bytes that keep it alive
    next_bytes: tuple[np.ndarray, ...]
    #: a few bytes every state of a language that contains the slice's must let through first
    probe: tuple[int, ...]


@dataclass(frozen=True)
class VocabTables:
    """Everything about a vocabulary that mask computation needs, whatever the grammar."""

    index: TrieIndex
    #: JSON string content of any length, then of at most each of `SLICE_BOUNDS` bytes
    json_string: tuple[TokenSlice, ...]
    #: walks through a single lexeme's states, by `Lexer.residual_key`, for every
    #: grammar: most JSON Schemas have the same string, number and punctuation lexemes (see
    #: `MaskComputer.walk`)
    walks: LRUCache = field(default_factory=lambda: LRUCache(SHARED_WALK_BYTES))


_tables: weakref.WeakKeyDictionary[Vocabulary, VocabTables] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def tables_for(vocab: Vocabulary) -> VocabTables:
    """The tables of `vocab` (built on first use, kept while the vocabulary lives)."""
    with _lock:
        found = _tables.get(vocab)
        if found is None:
            index = TrieIndex.of(vocab.trie)
            dfa = compile_regex(rx.star(rx.char_class(JSON_STRING_CHARS)))
            found = VocabTables(index, tuple(_slice(vocab, index, dfa, n) for n in (None, *SLICE_BOUNDS)))
            _tables[vocab] = found
            kernels.warm_up()
            concat.warm_up()  # the join a compile runs: loaded with the vocabulary, not in a first TTFM
        return found


def _slice(vocab: Vocabulary, index: TrieIndex, dfa: ByteDFA, max_len: int | None) -> TokenSlice:
    trie = index.trie
    state = np.zeros(trie.n_nodes + 1, dtype=np.int32)  # the extra node: "no node", always dead
    state[0] = 1
    bounds = trie.depth_start
    for depth in range(1, len(bounds) - 1):  # each level from the one above: dense, once
        lo, hi = int(bounds[depth]), int(bounds[depth + 1])
        state[lo:hi] = dfa.transitions[state[index.parent[lo:hi]], index.byte[lo:hi]]
    inside = dfa.accepting[state[index.token_node]] & ~vocab.is_special
    if max_len is not None:
        inside &= trie.token_len[: vocab.size] <= max_len
    packed = np.packbits(inside, bitorder="little")
    mask = np.zeros(((vocab.size + 31) // 32) * 4, dtype=np.uint8)
    mask[: len(packed)] = packed
    mask = mask.view(np.int32)
    mask.flags.writeable = False
    rest = TrieIndex.of(TokenTrie(vocab, only=~inside))
    next_bytes = tuple(np.flatnonzero(row) for row in dfa.transitions)
    return TokenSlice(dfa, max_len, mask, rest, next_bytes, tuple(b" eat0.,-A\xc3\xe4"))
