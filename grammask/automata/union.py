"""`union_dfas`: the DFA of an alternation whose branches begin with different bytes, by laying
the branches' tables side by side.

A JSON grammar's alternations mostly part at once, or after a shared beginning that `compile`
takes out first: an empty object or one with members (`{ ws` then `}` or `"`), an empty array or
one with items, a string or a number or `null`. Determinising such a lexeme again from its
characters took milliseconds, and one alternation inside a member's value sent the whole member
through that pipeline. Where no byte can begin two branches, the union needs no subset
construction: its start reads each branch's first byte as that branch's start does, and from there
on it is in that branch's own table. The branches' DFAs are compiled parts (cached by
`compile_regex`), so this costs a few table copies.

The result is exact, deterministic and trim. The branches' ends (accepting states with no way on)
are merged into one, so that one JSON string character (a character or an escape) is a closed DFA
that a bounded string can repeat as a chain; other equal tails of two branches stay apart, which
costs states, never correctness.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from grammask.automata.dfa import START, ByteDFA, Either, state_type

__all__ = ["union_dfas"]


def union_dfas(parts: Sequence[ByteDFA], max_states: int) -> ByteDFA | None:
    """The DFA of the strings some part accepts, or None where two parts can begin with the same
    byte or the union would have more than `max_states` states. The parts must be trim, as
    `compile_regex` makes them."""
    parts = [part for part in parts if part.accepting_states.size]
    seen = 0
    for part in parts:
        if seen & part.first_bits:
            return None
        seen |= part.first_bits
    if len(parts) <= 1:
        return parts[0] if parts else None
    # Part i's states from `kept` on follow the new start and the one end, in order (the ends
    # of every part are that one state); its start keeps a row of its own only where something
    # leads back to it.
    kept = [START if part.start_reentered else START + 1 for part in parts]
    all_ends, all_rows = [], []
    for part, first_kept in zip(parts, kept, strict=True):
        accepting = part.accepting_states[part.accepting_states > START]
        ends = accepting[~part.transitions[accepting].any(axis=1)]
        rows = np.ones(part.n_states, dtype=bool)
        rows[:first_kept] = False
        rows[ends] = False
        all_ends.append(ends)
        all_rows.append(np.flatnonzero(rows))
    shares_end = any(len(ends) for ends in all_ends)
    first_rows = np.cumsum([START + 1 + shares_end] + [len(rows) for rows in all_rows])
    size = int(first_rows[-1])
    if size > max_states:
        return None
    end = START + 1
    table = np.zeros((size, 256), dtype=state_type(size))
    union_accepting = np.zeros(size, dtype=bool)
    union_accepting[end] = shares_end
    for part, rows, ends, at in zip(parts, all_rows, all_ends, first_rows[:-1].tolist(), strict=True):
        new_id = np.zeros(part.n_states, dtype=table.dtype)
        new_id[rows] = np.arange(at, at + len(rows), dtype=table.dtype)
        new_id[ends] = end
        table[at : at + len(rows)] = new_id[part.transitions[rows]]
        union_accepting[at : at + len(rows)] = part.accepting[rows]
        first = part.first_bytes
        table[START, first] = new_id[part.transitions[START, first]]
        union_accepting[START] |= part.accepting[START]
    origin = Either(
        tuple(first_rows[:-1].tolist()),
        tuple(kept),
        tuple(tuple(ends.tolist()) for ends in all_ends),
        tuple(part.residual_source for part in parts),
        shares_end,
    )
    return ByteDFA(table, union_accepting, origin)
