"""`concat_dfas`: the DFA of a concatenation, by joining the parts' tables where no byte is ambiguous.

Most lexemes of a JSON grammar are chains of pieces that cannot run into each other: whitespace
then `,`, a `"` then a key's characters, string content then its closing `"`. When at every end
of the left part the bytes that continue it and the bytes that start the right part are disjoint,
the concatenation needs no subset construction: each end takes the right part's first row as well,
and stays accepting only when the right part accepts the empty string. Joining compiled parts
(each cached by `compile_regex`, so shared pieces are compiled once per process) costs a few table
copies instead of determinising and minimising the whole lexeme again.

The result is deterministic, trim (every state but the dead one can still accept, and is reachable)
and exact. It is not always minimal (a part that loops back to its own start keeps that start as
a state of its own), which costs lexer states, never correctness.

With numba (`grammask.jit`) the join is one compiled loop over the parts' stacked tables, in place;
without it, a dozen numpy calls per part, which cost most of the time of a JSON member's lexeme
(tens of microseconds per part, for parts of a few states).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from grammask import jit
from grammask.automata.dfa import DEAD, START, ByteDFA, Joined, state_type

__all__ = ["concat_dfas", "warm_up"]


def concat_dfas(parts: Sequence[ByteDFA], max_states: int, after: Sequence[Hashable] | None = None) -> ByteDFA | None:
    """The DFA of the strings made of one string of each part in order, or None when a boundary
    is ambiguous (some byte could both continue a left string and start the right one), a part
    accepts nothing, or the result would have more than `max_states` states. The parts must be
    trim, as `compile_regex` makes them. `after[i]`, when given, names the text of the parts
    after part i (None for the last): the result then names its states' residuals by the parts'
    (`ByteDFA.residual`)."""
    if not parts:
        return None
    layout = np.zeros((2, len(parts)), dtype=np.int64)  # per part: its first row, its first state kept
    if jit.AVAILABLE:
        total = sum(part.n_states for part in parts)  # the joined DFA has at most as many states
        table = np.concatenate([part.transitions for part in parts], dtype=state_type(total))
        accepting = np.concatenate([part.accepting for part in parts])
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        offsets[1:] = [part.n_states for part in parts]
        size = jit.jit("concat", _join)(table, accepting, offsets.cumsum(), max_states, layout)
        if size < 0:
            return None
        table, accepting = table[:size], accepting[:size]
    else:
        joined = _join_numpy(parts, max_states, layout)
        if joined is None:
            return None
        table, accepting = joined
    if after is None:
        return ByteDFA(table, accepting)
    rows, kept = (tuple(row.tolist()) for row in layout)
    return ByteDFA(table, accepting, origin=Joined(rows, kept, tuple(p.residual_source for p in parts), tuple(after)))


def _join_numpy(parts: Sequence[ByteDFA], max_states: int, layout: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """`concat_dfas` with numpy: a dozen calls per part."""
    if any(part.accepting_states.size == 0 for part in parts):
        return None
    # Room for every part's states; the joined automaton may use fewer (merged or dropped starts).
    total = sum(part.n_states for part in parts)
    table = np.zeros((total, 256), dtype=state_type(total))
    accepting = np.zeros(len(table), dtype=bool)
    size = parts[0].n_states
    table[:size] = parts[0].transitions
    accepting[:size] = parts[0].accepting
    ends = parts[0].accepting_states  # where the parts joined so far may end
    for index, part in enumerate(parts[1:], start=1):
        first = part.first_bytes
        rows_at_ends = table[ends]
        if rows_at_ends[:, first].any():
            return None
        # The right part's states are renumbered by one shift: those from `kept` on follow the
        # states so far, and its start becomes the one end (when nothing goes on from it), a
        # state of its own (when the part comes back to its start), or is dropped.
        n = part.n_states
        shift = size - 2
        if len(ends) == 1 and not rows_at_ends.any():
            kept, start = 2, int(ends[0])
        elif part.start_reentered:
            kept, shift, start = 1, size - 1, size
        else:
            kept, start = 2, 0  # nothing leads to the start: its number is never read
        if size + n - kept > max_states:
            return None
        layout[:, index] = size, kept
        new_id = np.arange(shift, shift + n, dtype=table.dtype)
        new_id[DEAD], new_id[START] = DEAD, start
        new_id.take(part.transitions[kept:], out=table[size : size + n - kept])
        accepting[size : size + n - kept] = part.accepting[kept:]
        targets = part.transitions[START, first]
        table[ends[:, None], first[None, :]] = new_id.take(targets)
        accepting[ends] = part.accepting[START]
        right_ends = part.accepting_states[part.accepting_states >= kept] + shift
        ends = np.concatenate((ends, right_ends)) if part.accepting[START] else right_ends
        size += n - kept
    # Views, not copies: the rows left unused (at most two per part) cost less than copying a
    # table too large for the allocator to reuse.
    return table[:size], accepting[:size]


def _join(table: np.ndarray, accepting: np.ndarray, offsets: np.ndarray, max_states: int, layout: np.ndarray) -> int:
    """`concat_dfas` over the parts' tables stacked in `table` (part i in rows `offsets[i]` to
    `offsets[i + 1]`), in place: the joined automaton is left in the first rows, and their number
    returned (-1 where the numpy version gives None); where each part's states went, in `layout`
    (its first row, its first state kept). Compiled by numba.

    A part's rows only move down (dropped starts), each read before anything is written over it."""
    for part in range(len(offsets) - 1):
        if not accepting[offsets[part] : offsets[part + 1]].any():
            return -1  # a part that accepts nothing
    ends = np.empty(len(table), dtype=np.int64)  # where the parts joined so far may end
    following = np.empty(len(table), dtype=np.int64)
    first = np.empty(256, dtype=np.int32)  # the right part's start row, before rows move over it
    n_ends = 0
    size = offsets[1]
    for state in range(size):
        if accepting[state]:
            ends[n_ends] = state
            n_ends += 1
    for part in range(1, len(offsets) - 1):
        base, n = offsets[part], offsets[part + 1] - offsets[part]
        first[:] = table[base + START]
        empty = accepting[base + START]  # the right part accepts the empty string
        continued = False  # some byte goes on from an end
        for e in range(n_ends):
            for byte in range(256):
                if table[ends[e], byte] != DEAD:
                    continued = True
                    if first[byte] != DEAD:
                        return -1  # ambiguous boundary
        reentered = False
        for state in range(base + START, base + n):
            for byte in range(256):
                if table[state, byte] == START:
                    reentered = True
        if n_ends == 1 and not continued:
            kept, shift, start = 2, size - 2, ends[0]
        elif reentered:
            kept, shift, start = 1, size - 1, size
        else:
            kept, shift, start = 2, size - 2, 0
        if size + n - kept > max_states:
            return -1
        layout[0, part] = size
        layout[1, part] = kept
        n_following = 0
        if empty:
            following[:n_ends] = ends[:n_ends]
            n_following = n_ends
        for state in range(kept, n):
            row = size + state - kept
            for byte in range(256):
                target = table[base + state, byte]
                table[row, byte] = DEAD if target == DEAD else (start if target == START else target + shift)
            accepting[row] = accepting[base + state]
            if accepting[row]:
                following[n_following] = row
                n_following += 1
        for e in range(n_ends):
            end = ends[e]
            for byte in range(256):
                target = first[byte]
                if target != DEAD:
                    table[end, byte] = start if target == START else target + shift
            accepting[end] = empty
        ends, following = following, ends
        n_ends = n_following
        size += n - kept
    return size


def warm_up() -> None:
    """Compile `_join` now (or load it from numba's cache) for the argument types real joins pass."""
    if jit.AVAILABLE:
        transitions = np.zeros((3, 256), dtype=state_type(3))
        transitions[START, ord("a")] = 2
        letter = ByteDFA(transitions, np.array([False, False, True]))
        concat_dfas([letter, letter], 10)
