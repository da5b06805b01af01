"""`TokenTrie`: the prefix tree of a vocabulary's text tokens, as flat numpy arrays.

The engine walks it to compute a token mask: it feeds each edge byte to an automaton, and when a
node is rejected the whole subtree of tokens `sorted_tokens[node_lo:node_hi]` is rejected at once.

Layout (n = number of nodes, node 0 is the root, the empty prefix):

    parent, byte, depth     int32[n]   edge into each node (-1 for the root)
    depth_start             int32[max_len + 2]  nodes are in BFS order, and within one depth
                                       in the order of their prefixes (= by (parent, byte));
                                       depth d is depth_start[d]:depth_start[d + 1]
    token_node              int32[size]  node where a token's bytes end (-1: not in the trie)
    sorted_tokens           int32[n_text]  text tokens by bytes, ties by id
    node_lo, node_hi        int32[n]   sorted_tokens[node_lo:node_hi] start with the node's prefix
    node_end_count          int32[n]   tokens ending exactly at the node (first in that range)
    flat_bytes, token_start, token_len   bytes of t = flat_bytes[token_start[t]:][:token_len[t]]

Construction (no per-node Python): sort the token strings once; with lcp[i] the longest common
prefix of sorted tokens i-1 and i, token i creates exactly the nodes of depth lcp[i]+1 .. len[i]
(its other prefixes exist already). Creations ordered by (depth, token rank) are the BFS order,
since within a depth the first token with a prefix comes in prefix order. A node's parent is the
same token's node one level up: its own previous creation, or for its first creation the last
node of depth lcp[i] created by a rank <= i (one `searchsorted` on the (depth, rank) keys).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from grammask.vocab.vocabulary import Vocabulary

__all__ = ["TokenTrie"]


class TokenTrie:
    """Prefix tree over the text tokens (not special, not empty, not padding) of a vocabulary."""

    n_nodes: int
    max_len: int
    parent: np.ndarray
    byte: np.ndarray
    depth: np.ndarray
    depth_start: np.ndarray
    token_node: np.ndarray
    sorted_tokens: np.ndarray
    node_lo: np.ndarray
    node_hi: np.ndarray
    node_end_count: np.ndarray
    flat_bytes: np.ndarray
    token_start: np.ndarray
    token_len: np.ndarray

    def __init__(self, vocab: Vocabulary, only: np.ndarray | None = None) -> None:
        """The trie of `vocab`'s text tokens, or of those among them where `only` (bool per id) is set."""
        pieces = vocab.token_bytes
        keep = ~vocab.is_special[: len(pieces)]
        if only is not None:
            keep &= only[: len(pieces)]
        text_ids = np.flatnonzero(keep)
        order = sorted(text_ids.tolist(), key=pieces.__getitem__)  # stable: ties stay by id
        sorted_pieces = [pieces[i] for i in order]
        lengths = np.fromiter(map(len, sorted_pieces), np.int64, len(order))
        starts = np.zeros(len(order), np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        flat = np.frombuffer(b"".join(sorted_pieces), np.uint8)

        parent, edge, depth, node_lo, end_node = _build_nodes(flat, starts, lengths)
        max_len = int(lengths.max()) if len(order) else 0
        depth_start = np.searchsorted(depth, np.arange(max_len + 2), side="left")
        node_end_count = np.bincount(end_node, minlength=len(parent))
        subtree = _subtree_sizes(parent, depth_start, node_end_count)

        sorted_ids = np.asarray(order, np.int64)
        token_node = np.full(vocab.size, -1, np.int64)
        token_node[sorted_ids] = end_node
        token_start = np.zeros(vocab.size, np.int64)
        token_start[sorted_ids] = starts
        token_len = np.zeros(vocab.size, np.int64)
        token_len[sorted_ids] = lengths

        self.n_nodes = len(parent)
        self.max_len = max_len
        self.parent = _frozen(parent, np.int32)
        self.byte = _frozen(edge, np.int32)
        self.depth = _frozen(depth, np.int32)
        self.depth_start = _frozen(depth_start, np.int32)
        self.token_node = _frozen(token_node, np.int32)
        self.sorted_tokens = _frozen(sorted_ids, np.int32)
        self.node_lo = _frozen(node_lo, np.int32)
        self.node_hi = _frozen(node_lo + subtree, np.int32)
        self.node_end_count = _frozen(node_end_count, np.int32)
        self.flat_bytes = _frozen(flat, np.uint8)
        self.token_start = _frozen(token_start, np.int64)
        self.token_len = _frozen(token_len, np.int32)

    def node_of_prefix(self, prefix: bytes) -> int:
        """The node whose prefix is exactly `prefix`, or -1 when no text token starts with it."""
        node = 0
        for b in prefix:
            d = int(self.depth[node])
            if d == self.max_len:
                return -1
            level = slice(int(self.depth_start[d + 1]), int(self.depth_start[d + 2]))
            # Children of `node` are contiguous within the next level, ordered by byte.
            lo = np.searchsorted(self.parent[level], node, side="left")
            hi = np.searchsorted(self.parent[level], node, side="right")
            k = lo + np.searchsorted(self.byte[level][lo:hi], b)
            if k == hi or self.byte[level][k] != b:
                return -1
            node = level.start + int(k)
        return node

    def token_bytes(self, token: int) -> bytes:
        """The bytes of `token` as the trie stores them (empty when it is not in the trie)."""
        start = int(self.token_start[token])
        return self.flat_bytes[start : start + int(self.token_len[token])].tobytes()

    def __repr__(self) -> str:
        return f"TokenTrie(nodes={self.n_nodes}, tokens={len(self.sorted_tokens)}, max_len={self.max_len})"


def _build_nodes(
    flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes of the trie of the sorted strings packed in `flat`: per node its parent, edge byte,
    depth and first token rank (node_lo); per token rank the node where it ends."""
    n = len(starts)
    lcp = _common_prefix_lengths(flat, starts, lengths)
    # Creations in rank order: rank r creates depths lcp[r]+1 .. lengths[r].
    created = lengths - lcp
    first = np.zeros(n + 1, np.int64)
    np.cumsum(created, out=first[1:])
    rank = np.repeat(np.arange(n, dtype=np.int64), created)
    depth = lcp[rank] + 1 + (np.arange(first[-1], dtype=np.int64) - first[rank])
    # A stable sort by depth alone keeps ranks increasing within a depth (radix sort if narrow).
    narrow = np.uint16 if n == 0 or lengths.max() < 1 << 16 else np.int64
    node_order = np.argsort(depth.astype(narrow), kind="stable")
    node_id = np.empty(len(node_order), np.int64)  # creation -> node (the root is node 0)
    node_id[node_order] = np.arange(1, len(node_order) + 1)
    key = (depth * (n + 1) + rank)[node_order]

    def node_of(d: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Node of the prefix of length d >= 1 of the token of rank r: the last node of that
        depth created by a rank <= r (the tokens in between share the prefix)."""
        return np.searchsorted(key, d * (n + 1) + r, side="right")

    # A creation's parent is the token's previous creation, except for the token's first one,
    # whose parent (at depth lcp) an earlier token created.
    parent_of = np.empty(len(node_order), np.int64)
    parent_of[1:] = node_id[:-1]
    heads = first[:-1][created > 0]
    head_rank = rank[heads]
    parent_of[heads] = np.where(lcp[head_rank] > 0, node_of(lcp[head_rank], head_rank), 0)

    n_nodes = len(node_order) + 1
    parent = np.full(n_nodes, -1, np.int64)
    parent[node_id] = parent_of
    edge = np.full(n_nodes, -1, np.int64)
    edge[node_id] = flat[starts[rank] + depth - 1]
    depths = np.zeros(n_nodes, np.int64)
    depths[node_id] = depth
    node_lo = np.zeros(n_nodes, np.int64)
    node_lo[node_id] = rank

    # A token ends at its last creation; a duplicate (it creates nothing) at its twin's node.
    end_node = np.zeros(n, np.int64)
    own = created > 0
    end_node[own] = node_id[first[1:][own] - 1]
    twins = np.flatnonzero(~own)
    end_node[twins] = node_of(lengths[twins], twins)
    return parent, edge, depths, node_lo, end_node


def _subtree_sizes(parent: np.ndarray, depth_start: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per node, the sum of `counts` over its subtree: levels added into their parents, deepest
    first (each level's parents lie in the level above)."""
    total = counts.astype(np.int64)
    for d in range(len(depth_start) - 2, 0, -1):
        lo, hi, up = depth_start[d], depth_start[d + 1], depth_start[d - 1]
        sums = np.bincount(parent[lo:hi] - up, weights=total[lo:hi], minlength=lo - up)
        total[up:lo] += sums.astype(np.int64)
    return total


def _common_prefix_lengths(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """lcp[i] = length of the common prefix of strings i-1 and i (lcp[0] = 0), for strings packed
    in `flat`. One pass per byte position over the pairs still equal so far: total work is the
    sum of the lcps, not n * max_len."""
    n = len(starts)
    lcp = np.zeros(n, np.int64)
    if n < 2:
        return lcp
    limit = np.minimum(lengths[1:], lengths[:-1])
    active = np.flatnonzero(limit > 0) + 1  # pair (i-1, i) is named by i
    offset = 0
    while len(active):
        same = flat[starts[active] + offset] == flat[starts[active - 1] + offset]
        active = active[same]
        offset += 1
        lcp[active] = offset
        active = active[limit[active - 1] > offset]
    return lcp


def _frozen(values: np.ndarray, dtype: type) -> np.ndarray:
    out: np.ndarray = np.ascontiguousarray(values, dtype=dtype)
    out.flags.writeable = False
    return out
