"""`subtract_dfas`: the DFA of `left − right` from the two sides' byte DFAs, by a product.

An object's extra keys are "any string but the declared names": the left side is the JSON string
body, the same automaton in every schema (compiled once per process), and the right side is the
declared names in all their spellings, a small acyclic automaton. Pairing their states directly
avoids determinising the string body again for every object. While the right side is alive a
state is a pair; once it dies, what is left is the left side on its own, so those states are the
left DFA's states, shared by every pair that falls off the right side there.

The result is exact and trim (unreachable states and states that can no longer accept are
dropped), though not always minimal.
"""

from __future__ import annotations

import numpy as np

from grammask.automata.dfa import START, ByteDFA

__all__ = ["subtract_dfas"]


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
        return ByteDFA(np.zeros((2, 256), dtype=np.int32), np.zeros(2, dtype=bool))
    # States: 0 dead, the live pairs from 1, then the left states the pairs fall into, and what
    # those reach, in left's order.
    kept_pairs = np.flatnonzero(live)
    paired = paired[kept_pairs]
    entries = np.unique(-paired[(paired < 0) & (paired > -n_left)])
    kept_left = np.array(sorted(_reached(left.successors, entries.tolist())), dtype=np.int64)
    new_id = np.zeros(n_left + len(ids), dtype=np.int32)  # by left state, then by pair + n_left
    new_id[kept_left] = np.arange(1 + len(kept_pairs), 1 + len(kept_pairs) + len(kept_left), dtype=np.int32)
    new_id[n_left + kept_pairs] = np.arange(1, 1 + len(kept_pairs), dtype=np.int32)
    table = np.zeros((1 + len(kept_pairs) + len(kept_left), 256), dtype=np.int32)
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
