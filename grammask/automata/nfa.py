"""Regex syntax tree → character-level NFA (Thompson's construction, built backwards and shared).

Each occurrence of a character class is one state with one edge reading that class; sequences,
choices and repeats join them with epsilon edges. The automaton is built from the end: a node is
built *in front of* a continuation state, so a node that occurs twice with the same continuation
(the branches of a choice that all end in the same string-character loop, say) is built once.
Front-ends produce such trees all the time, and sharing keeps the subset automaton close to the
minimal one instead of distinguishing identical copies. Nodes are compared structurally through
their numbers (`rx.ident`), given once per node object (no deep hashing or comparing of subtrees). The
numbering puts nearly every epsilon edge from a higher state to a lower one (only a loop's hub
points into its body), which `determinise` uses to compute closures in one ascending pass.

Bounded repeats are expanded into copies, nested so that `x{0,n}` never puts more than two
copies' entries in one epsilon closure.

A difference `left − right` has no Thompson construction. Its own DFA comes from the caller
(`differences`, built from an NFA with a second, rejecting end: `rejected`) and is laid in as
states: one epsilon hub per DFA state, leading to one state per transition and, where the DFA
accepts, to the continuation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from grammask.ir import regex as rx
from grammask.ir.walk import Walk, run

__all__ = ["CharDFA", "CharNFA", "NFABuilder"]


@dataclass
class CharNFA:
    """Per state: the class its one character edge reads (an index into `classes`, -1: no
    edge), that edge's target, and epsilon edges. `classes` are the distinct classes read."""

    labels: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)
    classes: list[rx.CharClass] = field(default_factory=list)
    start: int = 0
    final: int = 0
    #: A second end (-1: none): a string that reaches it is rejected even if it reaches `final`.
    reject: int = -1


@dataclass(frozen=True)
class CharDFA:
    """A trim DFA over code points: per state (dead = 0, start = 1), its (target, atom set)
    transitions, atom sets as bitmasks over `atom_ranges`; which states accept; and whether it
    has been minimised."""

    rows: Sequence[Sequence[tuple[int, int]]]
    accepting: Sequence[bool]
    atom_ranges: tuple[tuple[tuple[int, int], ...], ...]
    minimal: bool = True


class NFABuilder:
    """Builds the NFA of one tree.

    `rejected`: strings it matches are rejected (`CharNFA.reject`). `differences`: the DFA of each
    `rx.Difference` in the tree (required when there is one)."""

    def __init__(
        self,
        root: rx.RegexNode,
        rejected: rx.RegexNode | None = None,
        differences: Callable[[rx.Difference], CharDFA] | None = None,
    ) -> None:
        self.root = root
        self.rejected = rejected
        self._differences = differences
        #: whether `build` laid a difference's DFA in (its states need not reach the end)
        self.has_differences = False

    def build(self) -> CharNFA:
        # The walkers are methods, not closures over each other: recursive closures would form a
        # reference cycle holding the build's tables until the cyclic collector passed.
        self._nfa = nfa = CharNFA()
        self._built: dict[tuple[int, int], int] = {}  # (`rx.ident`, continuation) → entry state
        self._class_index: dict[tuple, int] = {}  # ranges of a class → its index in `classes`
        nfa.final = self._new_state()
        nfa.start = run(self._build(self.root, nfa.final))
        if self.rejected is not None:
            nfa.reject = self._new_state()
            entries = [nfa.start, run(self._build(self.rejected, nfa.reject))]
            nfa.start = self._new_state()
            nfa.eps[nfa.start] = entries
        self._built, self._class_index = {}, {}
        return nfa

    def _new_state(self) -> int:
        nfa = self._nfa
        nfa.labels.append(-1)
        nfa.targets.append(-1)
        nfa.eps.append([])
        return len(nfa.eps) - 1

    def _build(self, node: rx.RegexNode, cont: int) -> Walk[int]:
        """Add `node`'s states in front of state `cont`; return its entry state."""
        found = self._leaf(node, cont)  # a class at the root (items take theirs without a walk)
        if found is not None:
            return found
        nfa, built = self._nfa, self._built
        key = (rx.ident(node), cont)  # equal subtrees before the same continuation: built once
        found = built.get(key)
        if found is not None:
            return found
        if isinstance(node, rx.Difference):
            assert self._differences is not None, "a tree with a difference needs `differences`"
            found = self._lay_in(self._differences(node), cont)
            self.has_differences = True
        elif isinstance(node, rx.Concat):
            for item in reversed(node.items):
                cont = self._leaf(item, cont) or (yield self._build(item, cont))
            found = cont
        elif isinstance(node, rx.Alt):
            entries = []
            for item in node.items:
                entries.append(self._leaf(item, cont) or (yield self._build(item, cont)))
            found = self._new_state()
            nfa.eps[found] = entries
        else:
            assert isinstance(node, rx.Repeat), node  # a class was taken by `_leaf` above
            found = yield self._build_repeat(node, cont)
        built[key] = found
        return found

    def _leaf(self, node: rx.RegexNode, cont: int) -> int | None:
        """`_build` for a character class, at once (its entry state, never 0: state 0 is the
        final one); None for any other node. Most items are classes, and a sub-walk each (a
        generator's round trip) was most of the cost of building them."""
        if not isinstance(node, rx.CharClass):
            return None
        key = (rx.ident(node), cont)
        found = self._built.get(key)
        if found is None:
            found = self._built[key] = self._char_state(node, cont)
        return found

    def _char_state(self, cc: rx.CharClass, target: int) -> int:
        """A new state reading `cc` into `target`."""
        nfa = self._nfa
        label = self._class_index.get(cc.ranges)
        if label is None:
            label = self._class_index[cc.ranges] = len(nfa.classes)
            nfa.classes.append(cc)
        nfa.labels.append(label)
        nfa.targets.append(target)
        nfa.eps.append([])
        return len(nfa.eps) - 1

    def _lay_in(self, dfa: CharDFA, cont: int) -> int:
        """`dfa`'s states in front of `cont`; returns the entry (its start's hub). Each hub comes
        after its transition states, so its epsilon edges lead to lower states."""
        hubs = [0] * len(dfa.rows)
        edges: list[tuple[int, int]] = []  # (transition state, target DFA state)
        for s in range(1, len(dfa.rows)):
            moves = []
            for t, atoms in dfa.rows[s]:
                if t:
                    moves.append(self._char_state(_atoms_class(atoms, dfa.atom_ranges), -1))
                    edges.append((moves[-1], t))
            hubs[s] = self._new_state()
            self._nfa.eps[hubs[s]] = [*moves, cont] if dfa.accepting[s] else moves
        for state, t in edges:
            self._nfa.targets[state] = hubs[t]
        return hubs[1]

    def _build_repeat(self, node: rx.Repeat, cont: int) -> Walk[int]:
        eps = self._nfa.eps
        inner = node.item
        if isinstance(inner, rx.Repeat) and inner.min <= 1:
            # (x{0|1,b}){m,n} is x{m·min, n·b}: same counts, and no epsilon closures
            # spanning copies.
            high = None if inner.max is None or node.max is None else inner.max * node.max
            flat = rx.repeat(inner.item, node.min * inner.min, high)
            return self._leaf(flat, cont) or (yield self._build(flat, cont))
        if node.max is None:
            hub = cur = self._new_state()
            eps[hub] = [self._leaf(inner, hub) or (yield self._build(inner, hub)), cont]
        else:
            cur = cont
            for _ in range(node.max - node.min):
                # Either stop here, or read one more copy and decide again after it.
                entry = self._leaf(inner, cur) or (yield self._build(inner, cur))
                cur = self._new_state()
                eps[cur] = [cont, entry]
        for _ in range(node.min):
            cur = self._leaf(inner, cur) or (yield self._build(inner, cur))
        return cur


def _atoms_class(atoms: int, atom_ranges: tuple[tuple[tuple[int, int], ...], ...]) -> rx.CharClass:
    """The class of the code points of a set of atoms (bit `a` for atom `a`)."""
    ranges: list[tuple[int, int]] = []
    while atoms:
        low = atoms & -atoms
        atoms ^= low
        ranges.extend(atom_ranges[low.bit_length() - 1])
    return rx.char_class(ranges)
