"""Character NFA → DFA over alphabet atoms, by subset construction.

A DFA state is the set of "important" NFA states (those with a character edge, plus the final
state) reachable by epsilon moves; the empty set is the dead state 0. Each new state's row is
built column by column from its members' rows, with a memo from target columns to DFA states so
that the many states sharing a column shape cost one dictionary lookup per atom.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grammask.automata.alphabet import Alphabet
from grammask.automata.nfa import CharNFA

__all__ = ["determinise"]


def determinise(
    nfa: CharNFA, alphabet: Alphabet, max_states: int, on_overflow: Callable[[], Exception]
) -> tuple[np.ndarray, np.ndarray, int]:
    """(table int32 [n, atoms], accepting bool [n], start); raises `on_overflow()` as soon as
    more than `max_states` states exist."""
    labels, targets, eps, final = nfa.labels, nfa.targets, nfa.eps, nfa.final
    n_atoms = alphabet.size
    closures: dict[int, frozenset[int]] = {}

    def closure(state: int) -> frozenset[int]:
        found = closures.get(state)
        if found is None:
            seen, stack, keep = {state}, [state], []
            while stack:
                s = stack.pop()
                if labels[s] is not None or s == final:
                    keep.append(s)
                for t in eps[s]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
            found = closures[state] = frozenset(keep)
        return found

    rows: dict[int, list[int]] = {}

    def row(state: int) -> list[int]:
        """NFA target of `state` for each atom (-1: none)."""
        found = rows.get(state)
        if found is None:
            found = rows[state] = [-1] * n_atoms
            label = labels[state]
            if label is not None:
                for atom in alphabet.class_atoms[label]:
                    found[atom] = targets[state]
        return found

    ids: dict[frozenset[int], int] = {frozenset(): 0}
    sets: list[frozenset[int]] = [frozenset()]

    def intern(states: frozenset[int]) -> int:
        found = ids.get(states)
        if found is None:
            found = ids[states] = len(sets)
            sets.append(states)
            if len(sets) > max_states:
                raise on_overflow()
        return found

    # Column of NFA targets (an int for one-member sets, a tuple otherwise) → DFA state.
    memo: dict[object, int] = {-1: 0}

    def target(column: object) -> int:
        if isinstance(column, int):
            states = closure(column)
        else:
            states = frozenset().union(*[closure(t) for t in column if t >= 0])
        found = memo[column] = intern(states)
        return found

    start = intern(closure(nfa.start))
    table: list[list[int]] = [[0] * n_atoms]
    get = memo.get
    i = 1
    while i < len(sets):
        members = sets[i]
        columns = row(next(iter(members))) if len(members) == 1 else zip(*[row(s) for s in members])
        table.append([t if (t := get(c)) is not None else target(c) for c in columns])
        i += 1
    accepting = np.array([final in s for s in sets], dtype=bool)
    return np.array(table, dtype=np.int32).reshape(len(sets), n_atoms), accepting, start
