"""`subtract_dfas`: the DFA of `left − right` from the two sides' byte DFAs, by a product.

An object's extra keys are "any string but the declared names": the left side is the JSON string
body, the same automaton in every schema (compiled once per process), and the right side is the
declared names in all their spellings, a small acyclic automaton. Pairing their states directly
avoids determinising the string body again for every object. While the right side is alive a
state is a pair; once it dies, what is left is the left side on its own, so those states are the
left DFA's states, shared by every pair that falls off the right side there.

Where the right side is a few words (the declared names themselves, as they most often are),
`subtract_words` pairs the left DFA with the words' trie instead: a trie node is reached by one
path, so it pairs with one left state, and the product is laid out in one pass over the trie
with no automaton built for the right side.

The results are exact and trim (unreachable states and states that can no longer accept are
dropped), though not always minimal.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from grammask.automata.dfa import START, ByteDFA, state_type

__all__ = ["subtract_dfas", "subtract_words"]


def subtract_dfas(left: ByteDFA, right: ByteDFA, max_states: int) -> ByteDFA | None:
    """The DFA of the strings `left` accepts and `right` does not, or None when the product needs
    more than `max_states` states before trimming."""
    n_left, n_right = left.n_states, right.n_states
    lt, la, ra, rt = left.transitions, left.accepting, right.accepting, right.transitions
    # Pairs (left, right) as codes left * n_right + right, numbered breadth first (targets of a
    # pair by byte), one level of the search at a time: a level's rows are a gather from both
    # tables, and only its distinct targets are looked up one by one. A pair's row names left's
    # own states as -q (where right dies) and pairs as -(number + n_left).
    ids = {START * n_right + START: 0}
    level = np.array([START * n_right + START], dtype=np.int64)
    rows: list[np.ndarray] = []
    sources: list[np.ndarray] = []  # the edges between pairs, for the search for live pairs
    targets: list[np.ndarray] = []
    done = 0  # pairs in the levels before this one
    while len(level):
        q, r = np.divmod(level, n_right)
        after = lt[q].astype(np.int64)
        both = (after != 0) & (rt[r] != 0)
        codes = after[both] * n_right + rt[r][both]  # parent by parent, each by byte
        distinct, first = np.unique(codes, return_index=True)
        new = [c for c in distinct[np.argsort(first, kind="stable")].tolist() if c not in ids]
        if len(ids) + len(new) + n_left > max_states:
            return None
        ids.update(zip(new, range(len(ids), len(ids) + len(new)), strict=True))
        numbers = np.fromiter(map(ids.__getitem__, distinct.tolist()), dtype=np.int64, count=len(distinct))
        to = numbers[np.searchsorted(distinct, codes)]
        row = -after
        row[both] = -(to + n_left)
        rows.append(row.astype(np.int32))
        sources.append(np.nonzero(both)[0] + done)
        targets.append(to)
        done += len(level)
        level = np.array(new, dtype=np.int64)
    paired = np.concatenate(rows)
    left_of, right_of = np.divmod(np.fromiter(ids, dtype=np.int64, count=len(ids)), n_right)
    accepts = la[left_of] & ~ra[right_of]
    # Left's own states all can accept (it is trim): a pair can, if it accepts, falls off the
    # right side somewhere, or leads to a pair that can.
    live = accepts | ((paired < 0) & (paired > -n_left)).any(axis=1)
    source, target = np.concatenate(sources), np.concatenate(targets)
    while True:
        grown = live[target] & ~live[source]
        if not grown.any():
            break
        live[source[grown]] = True
    if not live[0]:
        return ByteDFA(np.zeros((2, 256), dtype=state_type(2)), np.zeros(2, dtype=bool))
    # States: 0 dead, the live pairs from 1, then the left states the pairs fall into, and what
    # those reach, in left's order.
    kept_pairs = np.flatnonzero(live)
    paired = paired[kept_pairs]
    entries = np.unique(-paired[(paired < 0) & (paired > -n_left)])
    kept_left = np.array(sorted(_reached(left.successors, entries.tolist())), dtype=np.int64)
    n = 1 + len(kept_pairs) + len(kept_left)
    new_id = np.zeros(n_left + len(ids), dtype=state_type(n))  # by left state, then by pair + n_left
    new_id[kept_left] = np.arange(1 + len(kept_pairs), n, dtype=new_id.dtype)
    new_id[n_left + kept_pairs] = np.arange(1, 1 + len(kept_pairs), dtype=new_id.dtype)
    table = np.zeros((n, 256), dtype=new_id.dtype)
    table[1 : 1 + len(kept_pairs)] = new_id[-paired]
    table[1 + len(kept_pairs) :] = new_id[lt[kept_left]]
    accepting = np.concatenate(([False], accepts[kept_pairs], la[kept_left]))
    return ByteDFA(table, accepting)


def _reached(successors: tuple[tuple[int, ...], ...], entries: list[int]) -> set[int]:
    """The states reachable from `entries` (included)."""
    seen = set(entries)
    waiting = list(entries)
    while waiting:
        for t in successors[waiting.pop()]:
            if t not in seen:
                seen.add(t)
                waiting.append(t)
    return seen


def subtract_words(left: ByteDFA, words: Iterable[bytes], max_states: int) -> ByteDFA | None:
    """The DFA of the strings `left` accepts other than `words`, or None when it needs more than
    `max_states` states. A state is a node of the words' trie where `left` is alive (in the one
    state that node's path leads to), or a state of `left` alone once the text left the trie.
    Nodes that do alike are merged, bottom up (the ends of the words, mostly), and a node that
    does what its state of `left` does is that state: for a minimal `left`, the result is
    minimal but where a node does what another state of `left` does."""
    lt, la = left.transitions, left.accepting
    children: list[dict[int, int]] = [{}]
    ends = [False]
    for word in words:
        node = 0
        for byte in word:
            child = children[node].get(byte)
            if child is None:
                child = children[node][byte] = len(children)
                children.append({})
                ends.append(False)
            node = child
        ends[node] = True
    rows: dict[int, list[int]] = {}  # left's rows the trie reads, as lists (indexed in Python)
    # The trie nodes where `left` is alive, breadth first from the root, and its state at each.
    state_of = {0: START}
    order = [0]
    for node in order:  # (grows as it goes)
        q = state_of[node]
        row = rows.get(q) or rows.setdefault(q, lt[q].tolist())
        for byte, child in children[node].items():
            if row[byte]:
                state_of[child] = row[byte]
                order.append(child)
    # Bottom up (children come after their parents in `order`): what each node does, as
    # ("left", q) where it does what left's state q does, ("pair", n) for the n-th distinct
    # behaviour, or None where it can no longer accept (left is trim: each of its states can). A
    # behaviour is (left's state, whether it accepts, what each byte into the trie leads to).
    alive_bytes = {q: 256 - row.count(0) for q, row in rows.items()}
    left_accepts = la.tolist()  # read state by state: a list's items are plain bools, not numpy's
    kind: dict[int, tuple[str, int] | None] = {}
    behaviours: dict[tuple, int] = {}
    for node in reversed(order):
        q = state_of[node]
        row, accepts = rows[q], left_accepts[q] and not ends[node]
        moves = tuple((byte, kind.get(child)) for byte, child in children[node].items() if row[byte])
        if accepts == left_accepts[q] and all(to == ("left", row[byte]) for byte, to in moves):
            kind[node] = ("left", q)
        elif accepts or alive_bytes[q] > len(moves) or any(to is not None for _, to in moves):
            kind[node] = ("pair", behaviours.setdefault((q, accepts, moves), len(behaviours)))
        else:
            kind[node] = None
    start = kind[0]
    if start is None:
        return ByteDFA(np.zeros((2, 256), dtype=state_type(2)), np.zeros(2, dtype=bool))
    if start[0] == "left":  # no word is in left: nothing to take out
        return left
    # States: 0 dead, the behaviours from 1 (the root's first: the start), then the states of left
    # that they lead to and what those reach. Rows of behaviours name left's states as they are,
    # and behaviours as -(their number) until left's states are numbered.
    made = sorted(behaviours.items(), key=lambda item: item[1] != start[1])
    number_of = {n: i for i, (_, n) in enumerate(made, start=1)}
    paired = lt[[q for (q, _, _), _ in made]].astype(np.int64)  # (behaviours go in as negative numbers)
    edges = [
        (i, byte, 0 if to is None else -number_of[to[1]] if to[0] == "pair" else to[1])
        for i, ((_, _, moves), _) in enumerate(made)
        for byte, to in moves
    ]
    if edges:
        at, byte, to = np.array(edges, dtype=np.int64).T
        paired[at, byte] = to
    reached = np.zeros(left.n_states, dtype=bool)
    reached[paired[paired > 0]] = True
    entries = np.flatnonzero(reached).tolist()
    kept_left = np.array(sorted(_reached(left.successors, entries)), dtype=np.int64)
    if 1 + len(made) + len(kept_left) > max_states:
        return None
    n = 1 + len(made) + len(kept_left)
    new_id = np.zeros(left.n_states, dtype=state_type(n))
    new_id[kept_left] = np.arange(1 + len(made), n, dtype=new_id.dtype)
    table = np.zeros((n, 256), dtype=new_id.dtype)
    table[1 : 1 + len(made)] = np.where(paired >= 0, new_id[np.maximum(paired, 0)], -paired)
    table[1 + len(made) :] = new_id[lt[kept_left]]
    accepting = [False] + [accepts for (_, accepts, _), _ in made]
    return ByteDFA(table, np.concatenate((np.array(accepting, dtype=bool), la[kept_left])))
