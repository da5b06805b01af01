"""Character-level DFA → byte-level `ByteDFA`, by expanding transitions into UTF-8 byte tries.

Each character state reads a character through a small trie of byte ranges whose leaves are the
target character states. Trie nodes are hash-consed across the whole automaton (adjacent byte
ranges leading to the same node are merged first), so two nodes with the same future are one
state. Starting from a minimal character DFA over surrogate-free atoms this yields the minimal
byte DFA: UTF-8 is prefix-free and injective, so distinct character states stay distinct, and a
mid-character node can never equal a character state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from grammask.automata.dfa import ByteDFA
from grammask.automata.utf8 import utf8_sequences
from grammask.ir import regex as rx

__all__ = ["expand_utf8"]

_Ranges = tuple[tuple[int, int], ...]
#: A byte state: its edges' byte ranges and, per range, the target state.
_State = tuple[_Ranges, tuple[int, ...]]


@dataclass(frozen=True)
class _Template:
    """The trie reading one character, over slots (one per target). A ref indexes an environment
    holding the slots' targets, then the states made for `nodes` in order (children first)."""

    nodes: tuple[tuple[_Ranges, tuple[int, ...]], ...]
    root: tuple[_Ranges, tuple[int, ...]]


def expand_utf8(
    table: np.ndarray,
    accepting: np.ndarray,
    atom_ranges: tuple[_Ranges, ...],
    max_states: int,
    on_overflow: Callable[[], Exception],
) -> ByteDFA:
    """Byte DFA of a character DFA (table int [n, atoms] with dead = 0, start = 1); character
    state i keeps number i. Raises `on_overflow()` past `max_states` byte states."""
    n_chars = table.shape[0]
    states: list[_State] = [((), ())] * n_chars
    made: dict[_State, int] = {}
    # Row shape (each atom labelled by its target's order of first appearance) → template and
    # the label of each of its slots.
    shapes: dict[tuple[int, ...], tuple[_Template, tuple[int, ...]]] = {}
    for state, row in enumerate(table.tolist()):
        labels: dict[int, int] = {}
        shape = tuple(labels.setdefault(t, len(labels)) if t else -1 for t in row)
        if not labels:
            continue
        found = shapes.get(shape)
        if found is None:
            found = shapes[shape] = _shape_template(shape, len(labels), atom_ranges)
        template, slot_labels = found
        by_label = list(labels)
        env = [by_label[k] for k in slot_labels]
        for ranges, refs in template.nodes:
            key = (ranges, tuple(map(env.__getitem__, refs)))
            node = made.get(key)
            if node is None:
                node = made[key] = len(states)
                states.append(key)
                if len(states) > max_states:
                    raise on_overflow()
            env.append(node)
        ranges, refs = template.root
        states[state] = (ranges, tuple(map(env.__getitem__, refs)))
    extra = np.zeros(len(states) - n_chars, dtype=bool)
    return ByteDFA(_fill(states), np.concatenate([accepting, extra]))


def _fill(states: list[_State]) -> np.ndarray:
    """int32 [n, 256] transition table: each range's target written as a step of a running sum."""
    counts = np.array([len(children) for _, children in states], dtype=np.int64)
    bounds = np.array([r for ranges, _ in states for r in ranges], dtype=np.int64).reshape(-1, 2)
    targets = np.array([c for _, children in states for c in children], dtype=np.int32)
    rows = np.repeat(np.arange(len(states)), counts)
    steps = np.zeros((len(states), 257), dtype=np.int32)
    steps[rows, bounds[:, 0]] = targets
    steps[rows, bounds[:, 1] + 1] -= targets  # ends are distinct, though one may meet a start
    return np.cumsum(steps[:, :256], axis=1, dtype=np.int32)


def _shape_template(
    shape: tuple[int, ...], n_labels: int, atom_ranges: tuple[_Ranges, ...]
) -> tuple[_Template, tuple[int, ...]]:
    """The template for a row shape, and the label each of its slots stands for."""
    grouped: list[list[tuple[int, int]]] = [[] for _ in range(n_labels)]
    for atom, label in enumerate(shape):
        if label >= 0:
            grouped[label].extend(atom_ranges[atom])
    ranges = [rx.char_class(g).ranges for g in grouped]
    # Canonical slot order (by lowest code point), so that equal partitions share one template.
    order = tuple(sorted(range(n_labels), key=lambda k: ranges[k][0]))
    return _template(tuple(ranges[k] for k in order)), order


@lru_cache(maxsize=1024)
def _template(slot_ranges: tuple[_Ranges, ...]) -> _Template:
    """The hash-consed byte trie reading one character of any slot, leaves naming the slot."""
    n_slots = len(slot_ranges)
    seqs = sorted((seq, k) for k, ranges in enumerate(slot_ranges) for seq in utf8_sequences(ranges))
    nodes: dict[tuple[_Ranges, tuple[int, ...]], int] = {}

    def build(items: list[tuple[tuple[tuple[int, int], ...], int]]) -> tuple[_Ranges, tuple[int, ...]]:
        groups: dict[tuple[int, int], list] = {}
        for seq, leaf in items:
            groups.setdefault(seq[0], []).append((seq[1:], leaf))
        ranges: list[tuple[int, int]] = []
        refs: list[int] = []
        for (lo, hi), rest in groups.items():
            if rest[0][0]:
                ref = n_slots + nodes.setdefault(build(rest), len(nodes))
            else:
                ref = rest[0][1]  # a whole character read: `rest` is this one slot
            if refs and refs[-1] == ref and ranges[-1][1] + 1 == lo:
                ranges[-1] = (ranges[-1][0], hi)
            else:
                ranges.append((lo, hi))
                refs.append(ref)
        return tuple(ranges), tuple(refs)

    root = build(seqs)
    return _Template(tuple(nodes), root)
