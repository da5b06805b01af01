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
    n_left = left.n_states
    lt, la, ra = left.transitions, left.accepting, right.accepting
    # The right side's rows as (byte, target) lists: its automaton is sparse (names, spelled out).
    states, bytes_ = np.nonzero(right.transitions)
    sparse: list[list[tuple[int, int]]] = [[] for _ in range(right.n_states)]
    targets = right.transitions[states, bytes_]
    for state, byte, target in zip(states.tolist(), bytes_.tolist(), targets.tolist(), strict=True):
        sparse[state].append((byte, target))
    # Pairs (left, right) in order of discovery; a pair's row names left's own states as -q.
    ids = {(START, START): 0}
    pairs = [(START, START)]
    rows: list[np.ndarray] = []
    successors: list[list[int]] = []  # per pair, the pairs a byte leads to
    for q, r in pairs:
        row = -lt[q]
        after = []
        for byte, r_next in sparse[r]:
            q_next = int(lt[q, byte])
            if q_next:
                pair = (q_next, r_next)
                found = ids.get(pair)
                if found is None:
                    if len(pairs) + n_left > max_states:
                        return None
                    found = ids[pair] = len(pairs)
                    pairs.append(pair)
                row[byte] = -found - n_left  # below every -q: renumbered once pairs are known
                after.append(found)
        rows.append(row)
        successors.append(after)
    paired = np.array(rows, dtype=np.int32)
    left_of, right_of = np.array(pairs).T
    accepts = la[left_of] & ~ra[right_of]
    # Left's own states all can accept (it is trim): a pair can, if it accepts, falls off the
    # right side somewhere, or leads to a pair that can.
    live = (accepts | ((paired < 0) & (paired > -n_left)).any(axis=1)).tolist()
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(pairs))):  # successors mostly come later: one pass, usually
            if not live[i] and any(live[j] for j in successors[i]):
                live[i] = changed = True
    if not live[0]:
        return ByteDFA(np.zeros((2, 256), dtype=np.int32), np.zeros(2, dtype=bool))
    # States: 0 dead, the live pairs from 1, then the left states the pairs fall into, and what
    # those reach, in left's order.
    kept_pairs = np.flatnonzero(live)
    paired = paired[kept_pairs]
    entries = np.unique(-paired[(paired < 0) & (paired > -n_left)])
    kept_left = np.array(sorted(_reached(left.successors, entries.tolist())), dtype=np.int64)
    new_id = np.zeros(n_left + len(pairs), dtype=np.int32)  # by left state, then by pair + n_left
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
