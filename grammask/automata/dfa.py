"""`ByteDFA`: a deterministic automaton over bytes, the form every lexeme takes for the engine.

Conventions every producer keeps and every consumer may rely on: state 0 is the dead state (all
its transitions lead to 0 and it does not accept) and state 1 is the start state. A DFA whose
start state accepts nothing has just these two states and is "empty".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import count

import numpy as np

__all__ = ["DEAD", "START", "ByteDFA"]

DEAD = 0
START = 1

_serials = count()


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """Transition table and accepting flags of a DFA over bytes (arrays are read-only)."""

    transitions: np.ndarray  # int32 [n_states, 256]
    accepting: np.ndarray  # bool [n_states]

    def __post_init__(self) -> None:
        t, a = self.transitions, self.accepting
        if t.ndim != 2 or t.shape[1] != 256 or t.shape[0] < 2 or a.shape != (t.shape[0],):
            raise ValueError(f"bad DFA shapes: transitions {t.shape}, accepting {a.shape}")
        if t[DEAD].any() or a[DEAD]:
            raise ValueError("state 0 must be the dead state")
        t.setflags(write=False)
        a.setflags(write=False)

    @property
    def n_states(self) -> int:
        return int(self.transitions.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory the DFA keeps alive: a joined DFA's table is a view of a table a little larger
        (`concat_dfas`), which is what it holds."""
        table = self.transitions
        return getattr(table.base, "nbytes", table.nbytes) + self.accepting.nbytes

    def matches(self, data: bytes) -> bool:
        """Whether the whole of `data` is accepted."""
        table = self.transitions
        state = START
        for byte in data:
            state = table[state, byte]
            if state == DEAD:
                return False
        return bool(self.accepting[state])

    @cached_property
    def serial(self) -> int:
        """A number no other DFA object of this process has: a key for caches of what is derived
        from this DFA in other objects (the walks of a vocabulary's tokens through it). The same
        lexeme in two grammars is the same object while the cache of compiled lexemes holds it."""
        return next(_serials)

    @cached_property
    def accepting_states(self) -> np.ndarray:
        """int [k]: the accepting states, ascending."""
        return np.flatnonzero(self.accepting)

    @cached_property
    def first_bytes(self) -> np.ndarray:
        """int [k]: the bytes on which the start state goes to a state other than dead, ascending."""
        return np.flatnonzero(self.transitions[START])

    @cached_property
    def first_bits(self) -> int:
        """`first_bytes` as a 256-bit set: bit b for byte b."""
        return int.from_bytes(np.packbits(self.transitions[START] != DEAD, bitorder="little").tobytes(), "little")

    @cached_property
    def start_reentered(self) -> bool:
        """Whether some transition leads back to the start state."""
        return bool((self.transitions[START:] == START).any())

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        """Per state, the states other than dead that one byte leads to, ascending."""
        return tuple(tuple(t for t in np.unique(row).tolist() if t != DEAD) for row in self.transitions)

    @cached_property
    def live(self) -> np.ndarray:
        """bool [n_states]: states from which some accepting state can be reached."""
        n = self.n_states
        sources = np.repeat(np.arange(n, dtype=np.int64), 256)
        edges = np.unique(self.transitions.astype(np.int64).ravel() * n + sources)
        targets, sources = np.divmod(edges, n)
        # Reverse adjacency in CSR form: predecessors of t are sources[ptr[t]:ptr[t + 1]].
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(targets, minlength=n), out=ptr[1:])
        live = self.accepting.copy()
        frontier = np.flatnonzero(live)
        while frontier.size:
            counts = ptr[frontier + 1] - ptr[frontier]
            offsets = np.repeat(ptr[frontier] - np.cumsum(counts) + counts, counts)
            preds = sources[offsets + np.arange(counts.sum())]
            preds = np.unique(preds[~live[preds]])
            live[preds] = True
            frontier = preds
        live.setflags(write=False)
        return live

    @property
    def is_empty(self) -> bool:
        """Whether no string at all is accepted."""
        return not self.live[START]
