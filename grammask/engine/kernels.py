"""Compiled kernels for the mask computation's inner loops, when numba is installed.

numba is optional (`pip install "grammask[fast]"`): without it, `grammask.engine.masks` runs its
numpy implementation of the same computation, and the results are identical (the tests compare
them). With it, a trie walk is a depth-first loop over the trie in machine code, about ten times
faster than the level-by-level numpy walk, and an order of magnitude more on sparse walks where
numpy's per-call overhead dominates.

Kernels never grow the lexer: where a walk reaches lexer states whose rows are not computed yet, it
hands those nodes back; the caller computes the rows and walks on from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grammask.jit import AVAILABLE, jit

__all__ = [
    "AVAILABLE",
    "RECORD",
    "cross_tokens",
    "lay_block",
    "set_bits",
    "slice_depth",
    "tokens_below",
    "walk_space",
    "walk_trie",
    "warm_up",
]


#: The layout of `tables.Preorder.record`: per field, its shift and its width in bits. The walk
#: reads the byte as the lowest bits (no shift) and the size as the highest (no mask).
RECORD = {"byte": (0, 8), "classes": (8, 16), "depth": (24, 12), "size": (36, 27)}
_CLASSES, _DEPTH, _SIZE = RECORD["classes"][0], RECORD["depth"][0], RECORD["size"][0]
_BYTE_BITS, _CLASS_BITS, _DEPTH_BITS = ((1 << RECORD[name][1]) - 1 for name in ("byte", "classes", "depth"))


def _walk_trie(
    frontier: np.ndarray,
    frontier_state: np.ndarray,
    table: np.ndarray,
    expanded: np.ndarray,
    boundary: np.ndarray,
    follows: np.ndarray,
    loops: np.ndarray,
    loop_classes: np.ndarray,
    node: np.ndarray,
    record: np.ndarray,
    token_at: np.ndarray,
    end_lo: np.ndarray,
    end_hi: np.ndarray,
    below_hi: np.ndarray,
    below_bytes: np.ndarray,
    root_children: np.ndarray,
    root_bytes: np.ndarray,
    sorted_tokens: np.ndarray,
    alive: np.ndarray,
    split_nodes: np.ndarray,
    split_states: np.ndarray,
    n_split: int,
    pending: np.ndarray,
    pending_state: np.ndarray,
    stack: np.ndarray,
) -> tuple[int, int]:
    """Walk the trie (`tables.Preorder`'s arrays) below the `frontier` positions, whose prefixes
    left the lexer in `frontier_state` (rows computed).

    Sets in `alive` (packed uint32) the tokens that keep the lexer alive to their end, and adds to
    `split_nodes`/`split_states` (from `n_split` on) the trie nodes where a lexeme is complete and
    tokens go on below with a byte that can begin a next lexeme (`Lexer.boundary`). A position
    whose lexer state has no row yet goes to `pending` instead of being walked below. Where a
    state steps to itself on every byte below a position (`Lexer.loops` covers `below_bytes`) and
    ends no lexeme that text can follow, every token of the subtree is alive and none of its nodes
    is a split: the subtree is taken whole (inside `[a-z]+`, most of a vocabulary's words). The
    test reads `loop_classes` against the record's classes first, which most subtrees fail
    without reading the sets. A state's loop set and classes are computed from its row the first
    time they are asked for, then kept: the set's words are written before the classes. `stack`
    is work space (the lexer state at each depth of the current path), as long as the deepest
    token. Returns the new number of split nodes and the number of pending positions."""
    n_pending = 0
    for f in range(len(frontier)):
        top, start = frontier[f], frontier_state[f]
        stack[(record[top] >> _DEPTH) & _DEPTH_BITS] = start
        # Below the root, from its list of children: they lie far apart in preorder, and a walk
        # inside a lexeme reads a few of them. Below any other position, all of it in one run.
        runs = len(root_children) if top == 0 else 1
        for run in range(runs):
            if top == 0:
                if table[start, root_bytes[run]] == 0:
                    continue
                at = root_children[run]
                stop = at + (record[at] >> _SIZE)
            else:
                at, stop = top + 1, top + (record[top] >> _SIZE)
            while at < stop:
                packed = record[at]
                depth = (packed >> _DEPTH) & _DEPTH_BITS
                after = table[stack[depth - 1], packed & _BYTE_BITS]
                skip = at + (packed >> _SIZE)  # the next position outside the subtree
                if after == 0:
                    at = skip
                    continue
                token = token_at[at]
                if token >= 0:
                    alive[token >> 5] |= np.uint32(1) << np.uint32(token & 31)
                elif token == -2:  # several tokens with these bytes
                    for k in range(end_lo[at], end_hi[at]):
                        token = sorted_tokens[k]
                        alive[token >> 5] |= np.uint32(1) << np.uint32(token & 31)
                if skip == at + 1:  # a leaf
                    at = skip
                    continue
                row = boundary[after]
                if row == 0 and expanded[after]:  # the whole subtree at once?
                    classes = loop_classes[after]
                    if classes == 0:
                        classes = 1 << 16
                        for byte in range(256):
                            if table[after, byte] == after:
                                loops[after, byte >> 6] |= np.uint64(1) << np.uint64(byte & 63)
                                classes |= 1 << (byte >> 4)
                        loop_classes[after] = classes
                    if (
                        (packed >> _CLASSES) & _CLASS_BITS & ~classes == 0
                        and below_bytes[at, 0] & ~loops[after, 0] == 0
                        and below_bytes[at, 1] & ~loops[after, 1] == 0
                        and below_bytes[at, 2] & ~loops[after, 2] == 0
                        and below_bytes[at, 3] & ~loops[after, 3] == 0
                    ):
                        for k in range(end_hi[at], below_hi[at]):
                            token = sorted_tokens[k]
                            alive[token >> 5] |= np.uint32(1) << np.uint32(token & 31)
                        at = skip
                        continue
                if row != 0:
                    child = at + 1
                    while child < skip:
                        below = record[child]
                        if follows[row, below & _BYTE_BITS]:
                            split_nodes[n_split] = node[at]
                            split_states[n_split] = after
                            n_split += 1
                            break
                        child += below >> _SIZE
                if expanded[after]:
                    stack[depth] = after
                    at += 1
                else:
                    pending[n_pending] = at
                    pending_state[n_pending] = after
                    n_pending += 1
                    at = skip
    return n_split, n_pending


def _cross_tokens(
    tokens: np.ndarray,
    offsets: np.ndarray,
    which: np.ndarray,
    bounds: np.ndarray,
    starts: np.ndarray,
    table: np.ndarray,
    expanded: np.ndarray,
    boundary: np.ndarray,
    follows: np.ndarray,
    flat_bytes: np.ndarray,
    token_start: np.ndarray,
    token_len: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step the bytes of each token `tokens[i]`, from byte `offsets[i]` on, through each lexeme
    its next byte `b` can begin: from each lexer state `starts[bounds[which[i], b] :
    bounds[which[i], b + 1]]` (a lexeme boundary `which[i]` and what it expects).

    Returns `(ok, died, entry, after, ended, missing)`: `ok[i]` when some lexeme stays alive to
    the token's end, `died[i]` when every one dies on the way (or there is none), and every
    position before the end where a lexeme is complete and the next byte can begin a next lexeme
    (`Lexer.boundary`), as (i, the position after the lexeme, the lexer state there), token by
    token. Where a state on the way has no row yet, `missing`
    lists such states and the rest is not meaningful: the caller computes them and calls again."""
    n = len(tokens)
    ok = np.zeros(n, dtype=np.bool_)
    died = np.zeros(n, dtype=np.bool_)
    pairs = 0  # (token, start state) pairs: each can miss one row
    capacity = 0  # each pair can end a lexeme once per byte it steps
    for i in range(n):
        token = tokens[i]
        byte = flat_bytes[token_start[token] + offsets[i]]
        count = bounds[which[i], byte + 1] - bounds[which[i], byte]
        pairs += count
        capacity += count * (token_len[token] - offsets[i])
    entry = np.empty(capacity, dtype=np.int64)
    after = np.empty(capacity, dtype=np.int64)
    ended = np.empty(capacity, dtype=np.int32)
    missing = np.empty(pairs, dtype=np.int64)
    n_split = 0
    n_missing = 0
    for i in range(n):
        token = tokens[i]
        base = token_start[token]
        end = token_len[token]
        byte = flat_bytes[base + offsets[i]]
        lo = bounds[which[i], byte]
        hi = bounds[which[i], byte + 1]
        n_died = 0
        for j in range(lo, hi):
            state = starts[j]
            position = offsets[i]
            while True:
                if not expanded[state]:
                    missing[n_missing] = state
                    n_missing += 1
                    break
                state = table[state, flat_bytes[base + position]]
                position += 1
                if state == 0:
                    n_died += 1
                    break
                if position == end:
                    ok[i] = True
                    break
                row = boundary[state]
                if row != 0 and follows[row, flat_bytes[base + position]]:
                    entry[n_split] = i
                    after[n_split] = position
                    ended[n_split] = state
                    n_split += 1
        died[i] = n_died == hi - lo
    return ok, died, entry[:n_split], after[:n_split], ended[:n_split], missing[:n_missing]


def _tokens_below(
    nodes: np.ndarray,
    first_child: np.ndarray,
    child_end: np.ndarray,
    edge: np.ndarray,
    end_lo: np.ndarray,
    below_hi: np.ndarray,
    depth: np.ndarray,
    sorted_tokens: np.ndarray,
    bounds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The tokens below trie `nodes` (a lexeme ends at each) whose next byte can begin a lexeme,
    `bounds[b] < bounds[b + 1]` for byte `b`: `(tokens, offsets, all_live)`, where `offsets[i]`
    is the length of the node's prefix, and `all_live` tells whether every child byte can."""
    n = 0
    for node in nodes:
        for child in range(first_child[node], child_end[node]):
            if bounds[edge[child] + 1] > bounds[edge[child]]:
                n += below_hi[child] - end_lo[child]
    tokens = np.empty(n, dtype=np.int64)
    offsets = np.empty(n, dtype=np.int64)
    all_live = True
    k = 0
    for node in nodes:
        for child in range(first_child[node], child_end[node]):
            if bounds[edge[child] + 1] == bounds[edge[child]]:
                all_live = False
                continue
            for j in range(end_lo[child], below_hi[child]):
                tokens[k] = sorted_tokens[j]
                offsets[k] = depth[child] - 1
                k += 1
    return tokens, offsets, all_live


def _lay_block(table: np.ndarray, base: int, source: np.ndarray) -> None:
    """Write rows `base + 1 ...` of a lexer table from a DFA's rows `1 ...`: every live target t
    becomes `base + t`, the dead state stays 0. One pass (numpy takes three)."""
    for i in range(1, source.shape[0]):
        for byte in range(source.shape[1]):
            target = source[i, byte]
            table[base + i, byte] = base + target if target else 0


def _set_bits(packed: np.ndarray, tokens: np.ndarray) -> None:
    """Set the bits of `tokens` in the packed mask `packed` (uint32), in place."""
    for token in tokens:
        packed[token >> 5] |= np.uint32(1) << np.uint32(token & 31)


#: Fibonacci hashing's multiplier (2**32 / the golden ratio): spreads keys over `_slice_depth`'s table.
_SPREAD = 0x9E3779B1


def _slice_depth(
    start: int,
    limit: int,
    slice_table: np.ndarray,
    table: np.ndarray,
    expanded: np.ndarray,
    max_pairs: int,
    missing: np.ndarray,
) -> tuple[int, int]:
    """How far every text of a slice's language surely keeps the lexer alive from lexer state `start`.

    A breadth-first walk over pairs (slice DFA state, lexer state), the slice DFA starting in state
    1. Returns `(d, n)`: every text of at most d bytes keeps the lexer alive (d is `limit` when no
    text of at most `limit` bytes dies, `limit + 1` when none of any length does), and the number
    of lexer states put in `missing` (up to its length) whose rows the walk needed: it does not go
    past them, so d is what holds without them, and computing them and walking again may prove more.
    Past `max_pairs` pairs, d is what was proven so far.

    The pairs seen are kept in an open-addressing table of their keys (most of a state's 256
    bytes lead to a pair seen already, and a lookup in a typed dict cost four times as much)."""
    n_slice = slice_table.shape[0]
    queue_slice = np.empty(max_pairs, dtype=np.int64)
    queue_state = np.empty(max_pairs, dtype=np.int64)
    queue_depth = np.empty(max_pairs, dtype=np.int64)
    size = 2
    while size < 2 * max_pairs:  # at most half full
        size *= 2
    seen = np.full(size, -1, dtype=np.int64)
    key = start * n_slice + 1
    seen[(key * _SPREAD) & (size - 1)] = key
    queue_slice[0], queue_state[0], queue_depth[0] = 1, start, 0
    head, tail, n_missing, proven = 0, 1, 0, limit + 1
    while head < tail:
        p, q, depth = queue_slice[head], queue_state[head], queue_depth[head]
        head += 1
        if depth >= limit:
            return min(proven, limit), n_missing
        if not expanded[q]:
            proven = min(proven, depth)
            if n_missing < len(missing) and q not in missing[:n_missing]:
                missing[n_missing] = q
                n_missing += 1
            continue
        for byte in range(256):
            p2 = slice_table[p, byte]
            if p2 == 0:
                continue
            q2 = table[q, byte]
            if q2 == 0:
                return min(proven, depth), n_missing
            key = q2 * n_slice + p2
            slot = (key * _SPREAD) & (size - 1)
            while seen[slot] != -1 and seen[slot] != key:
                slot = (slot + 1) & (size - 1)
            if seen[slot] == -1:
                if tail == max_pairs:
                    return min(proven, depth), n_missing
                seen[slot] = key
                queue_slice[tail], queue_state[tail], queue_depth[tail] = p2, q2, depth + 1
                tail += 1
    return proven, n_missing


def walk_trie(*args: Any) -> tuple[int, int]:
    """`_walk_trie`, compiled."""
    return jit("walk_trie", _walk_trie)(*args)


def cross_tokens(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_cross_tokens`, compiled."""
    return jit("cross_tokens", _cross_tokens)(*args)


def tokens_below(*args: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """`_tokens_below`, compiled."""
    return jit("tokens_below", _tokens_below)(*args)


def lay_block(table: np.ndarray, base: int, source: np.ndarray) -> None:
    """`_lay_block`, compiled."""
    jit("lay_block", _lay_block)(table, base, source)


def set_bits(packed: np.ndarray, tokens: np.ndarray) -> None:
    """`_set_bits`, compiled."""
    jit("set_bits", _set_bits)(packed, tokens)


def slice_depth(*args: Any) -> tuple[int, int]:
    """`_slice_depth`, compiled."""
    return jit("slice_depth", _slice_depth)(*args)


def walk_space(n: int) -> tuple[np.ndarray, ...]:
    """`walk_trie`'s output and work arrays for a trie of `n` nodes, as `MaskComputer` makes them:
    (split nodes, their states, pending positions, their states, the stack)."""
    return tuple(np.empty(n, dtype=np.int64 if i % 2 == 0 else np.int32) for i in range(5))


def warm_up() -> None:
    """Compile the kernels now (or load them from numba's cache) rather than at a first mask."""
    if not AVAILABLE:
        return
    one = np.zeros(1, dtype=np.int64)
    tokens = np.zeros(1, dtype=np.int32)
    tokens.flags.writeable = False  # as a trie's arrays are: numba types read-only arrays apart
    boundary, follows = np.zeros(2, dtype=np.int32), np.zeros((1, 256), dtype=bool)  # as `Lexer` has them
    space = walk_space(1)
    set_bits(np.zeros(1, dtype=np.uint32), one)
    for state in (np.uint16, np.int32):  # a lexer's table (16-bit states under the default limit)
        for dfa_state in (np.uint16, np.int32):  # a DFA's (`state_type`: likewise)
            source = np.zeros((2, 256), dtype=dfa_state)
            source.flags.writeable = False  # as a `ByteDFA`'s table is
            lay_block(np.zeros((2, 256), dtype=state), 0, source)
    int32 = np.ones(1, dtype=np.int32)
    for state in (np.uint16, np.int32):
        walk_trie(
            one, int32, np.zeros((2, 256), dtype=state), np.ones(2, dtype=bool), boundary, follows,
            np.zeros((2, 4), dtype=np.uint64), np.zeros(2, dtype=np.int32), one, one, int32, int32, int32, int32,
            np.zeros((1, 4), dtype=np.uint64), int32, np.zeros(1, dtype=np.uint8), tokens, np.zeros(1, dtype=np.uint32),
            *space[:2], 0, *space[2:],
        )  # fmt: skip
    data = np.zeros(1, dtype=np.uint8)
    data.flags.writeable = False
    lengths = np.ones(1, dtype=np.int32)
    lengths.flags.writeable = False
    starts = np.zeros(1, dtype=np.int64)
    starts.flags.writeable = False
    slice_table = np.zeros((2, 256), dtype=np.uint16)
    slice_table.flags.writeable = False  # a small `ByteDFA`'s table, as every real call passes
    for state in (np.uint16, np.int32):
        slice_depth(
            1, 1, slice_table, np.zeros((2, 256), dtype=state), np.ones(2, dtype=bool), 4, np.zeros(4, dtype=np.int64)
        )  # fmt: skip
    depth = np.ones(1, dtype=np.int32)
    depth.flags.writeable = False
    tokens_below(one, one, one, np.zeros(1, dtype=np.int32), one, one, depth, tokens, np.zeros(257, dtype=np.int64))
    bounds = np.zeros(257, dtype=np.int64)
    for table in (bounds[None, :], np.stack([bounds, bounds])):  # one lexeme boundary, and several
        for state in (np.uint16, np.int32):
            cross_tokens(
                one, one, one, table, np.ones(1, dtype=np.int32), np.zeros((2, 256), dtype=state),
                np.ones(2, dtype=bool), boundary, follows, data, starts, lengths,
            )  # fmt: skip
