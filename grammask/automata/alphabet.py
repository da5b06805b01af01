"""The character alphabet of a regex: code points grouped into atoms.

Two code points belong to the same atom when every character class of the regex contains both or
neither, so automata built over atoms have as few columns as the regex can tell apart (a handful,
even for Unicode `\\w`). Surrogates and code points in no class get no atom: no transition reads
them, and without surrogates every atom string has exactly one UTF-8 encoding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from grammask.ir import regex as rx

__all__ = ["Alphabet", "alphabet_of", "classes_of"]

_SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True)
class Alphabet:
    #: Code point ranges of each atom (sorted, disjoint, surrogate-free).
    atom_ranges: tuple[tuple[tuple[int, int], ...], ...]
    #: The atoms making up each class of the regex.
    class_atoms: dict[rx.CharClass, tuple[int, ...]]

    @property
    def size(self) -> int:
        return len(self.atom_ranges)


def classes_of(node: rx.RegexNode) -> set[rx.CharClass]:
    """The distinct character classes occurring in `node`."""
    found: set[rx.CharClass] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, rx.CharClass):
            found.add(n)
        elif isinstance(n, rx.Repeat):
            stack.append(n.item)
        else:
            stack.extend(n.items)
    return found


def alphabet_of(classes: Iterable[rx.CharClass]) -> Alphabet:
    classes = list(classes)
    cuts = {0, rx.MAX_CODEPOINT + 1, _SURROGATES[0], _SURROGATES[1] + 1}
    for cc in classes:
        for lo, hi in cc.ranges:
            cuts.update((lo, hi + 1))
    bounds = np.array(sorted(cuts), dtype=np.int64)
    # member[c, s]: class c contains segment s = [bounds[s], bounds[s + 1]).
    member = np.zeros((len(classes), len(bounds) - 1), dtype=bool)
    for c, cc in enumerate(classes):
        for lo, hi in cc.ranges:
            member[c, np.searchsorted(bounds, lo) : np.searchsorted(bounds, hi + 1)] = True
    member[:, np.searchsorted(bounds, _SURROGATES[0])] = False
    segments = np.flatnonzero(member.any(axis=0))
    signatures, atom_of_segment = np.unique(
        np.packbits(member[:, segments], axis=0).T, axis=0, return_inverse=True
    )
    atom_ranges = tuple(
        rx.char_class(
            [(int(bounds[s]), int(bounds[s + 1]) - 1) for s in segments[atom_of_segment.ravel() == a]]
        ).ranges
        for a in range(len(signatures))
    )
    atom_classes = np.unpackbits(signatures, axis=1, count=len(classes)).astype(bool)
    class_atoms = {cc: tuple(np.flatnonzero(atom_classes[:, c]).tolist()) for c, cc in enumerate(classes)}
    return Alphabet(atom_ranges, class_atoms)
