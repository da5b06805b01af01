"""`ByteDFA`: a deterministic automaton over bytes, the form every lexeme takes for the engine.

Conventions every producer keeps and every consumer may rely on: state 0 is the dead state (all
its transitions lead to 0 and it does not accept) and state 1 is the start state. A DFA whose
start state accepts nothing has just these two states and is "empty".

`ByteDFA.residual` names what can follow a state, across DFAs: a DFA joined from parts
(`concat_dfas`) names a state of part i by the part's own name for it and the text of the parts
after it, and a chain of classes (a member's name) by the classes left, so that the value of a
JSON member's lexeme (`"name": "` then a string), or the end of its name, is the same residual
in every member's lexeme, and what is derived from a residual (the walk of a vocabulary's
tokens) is shared by all of them. A union of branches that begin with different bytes
(`union_dfas`) names a branch's states by the branch's own names.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from itertools import count

import numpy as np

__all__ = ["DEAD", "NARROW_STATES", "START", "ByteDFA", "Chain", "Either", "Joined", "state_type"]

DEAD = 0
START = 1

#: States that a 16-bit table can number.
NARROW_STATES = 1 << 16


def state_type(n_states: int, narrow: int = NARROW_STATES) -> type[np.unsignedinteger] | type[np.signedinteger]:
    """The type of the entries of a table of `n_states` states (a `ByteDFA`'s, a lexer's): 16 bits
    up to `narrow` states, as every DFA under the default `Limits.max_dfa_states` and all but the
    largest lexers have, 32 past them. A table is 256 entries a state, and building a lexeme's
    automaton is mostly moving tables (`concat_dfas` joins a median MaskBench member's lexeme from
    a hundred rows): half the bytes took 7% off the median MaskBench schema's compile."""
    return np.uint16 if n_states <= narrow else np.int32


_serials = count()


@dataclass(frozen=True, eq=False)
class ByteDFA:
    """Transition table and accepting flags of a DFA over bytes (arrays are read-only). A table
    of another integer type is converted to `state_type`'s, so that the compiled kernels that
    read tables meet one type."""

    transitions: np.ndarray  # [n_states, 256] of `state_type(n_states)`
    accepting: np.ndarray  # bool [n_states]
    #: how it was built, where that names its states' residuals across DFAs (see `residual`)
    origin: Joined | Chain | Either | None = None

    def __post_init__(self) -> None:
        t, a = self.transitions, self.accepting
        if t.ndim != 2 or t.shape[1] != 256 or t.shape[0] < 2 or a.shape != (t.shape[0],):
            raise ValueError(f"bad DFA shapes: transitions {t.shape}, accepting {a.shape}")
        if t.dtype != state_type(t.shape[0]):
            if t.min() < 0 or t.max() >= t.shape[0]:
                raise ValueError("a DFA's targets must be its states")
            t = t.astype(state_type(t.shape[0]))
            object.__setattr__(self, "transitions", t)
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

    @property
    def residual_source(self) -> int | Joined | Chain | Either:
        """What `residual` reads: the serial, or how the DFA was built (no tables: a joined DFA
        keeps its parts' names, not their arrays)."""
        return self.serial if self.origin is None else self.origin

    def residual(self, state: int) -> Hashable:
        """A name for the strings that can follow `state` (its residual language), equal for two
        states (of any DFAs of this process) only where their residuals are equal."""
        return residual(self.residual_source, state)

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


@dataclass(frozen=True)
class Chain:
    """A chain of one character of each class in turn: state i (from 1) has `classes[i - 1:]`
    left, by the classes' numbers (`rx.ident`)."""

    classes: tuple[int, ...]


@dataclass(frozen=True)
class Joined:
    """How a DFA was joined from parts: part i's states `kept[i]` and on are rows `rows[i]` and on
    (up to `rows[i + 1]`), `sources[i]` is the part's `residual_source`, and `after[i]` names the
    text of the parts after it (equal names, equal languages)."""

    rows: tuple[int, ...]
    kept: tuple[int, ...]
    sources: tuple[int | Joined | Chain | Either, ...]
    after: tuple[Hashable, ...]


@dataclass(frozen=True)
class Either:
    """How a DFA was laid out from branches that begin with different bytes (`union_dfas`): state
    1 reads each branch's first bytes, state 2 (where `one_end`) is every branch's end (an
    accepting state with no way on), and branch i's states from `kept[i]` on, but its `ends[i]`,
    are rows `rows[i]` and on; `sources[i]` is the branch's `residual_source`."""

    rows: tuple[int, ...]
    kept: tuple[int, ...]
    ends: tuple[tuple[int, ...], ...]
    sources: tuple[int | Joined | Chain | Either, ...]
    one_end: bool


def residual(source: int | Joined | Chain | Either, state: int) -> Hashable:
    """`ByteDFA.residual` of `state` in the DFA that `source` describes: (serial, state) for a DFA
    built whole; the classes left for a chain (none in the dead state: it has nothing left, not
    an empty string); for a joined one, the residual of the state in its part, followed by the
    parts after it (the join is unambiguous, so the strings that follow are exactly those); for
    a union, the branches' names at its start, the empty string at the shared end, and a branch's
    own name for its states."""
    trail: list[Hashable] = []
    name: Hashable = None
    while name is None and isinstance(source, Joined | Either):
        if isinstance(source, Joined):
            part = bisect_right(source.rows, state) - 1
            state = state - source.rows[part] + source.kept[part]
            trail.append(source.after[part])
            source = source.sources[part]
        elif state == DEAD:
            name = ("dead",)
        elif state == START:
            name = ("either", source.sources)
        elif source.one_end and state == START + 1:
            name = ("end",)
        else:
            part = bisect_right(source.rows, state) - 1
            state = _nth_kept(source.kept[part], source.ends[part], state - source.rows[part])
            source = source.sources[part]
    if name is None:
        name = (
            ("chain", source.classes[state - 1 :] if state else None) if isinstance(source, Chain) else (source, state)
        )
    for after in reversed(trail):
        name = (name, after) if after is not None else name
    return name


def _nth_kept(first: int, holes: tuple[int, ...], n: int) -> int:
    """The `n`-th state (from 0) from `first` on that is not one of `holes` (ascending)."""
    state = first + n
    for hole in holes:
        if hole > state:
            break
        state += 1
    return state
