"""UTF-8 encodings of code point ranges as sequences of byte ranges.

A byte-level automaton accepts a set of characters by accepting their UTF-8 encodings. Any range
of code points splits into a few byte-range sequences, each matching exactly the encodings of a
contiguous block: `[U+0080, U+07FF]` is `[C2-DF][80-BF]`. Surrogates (U+D800..U+DFFF) have no
UTF-8 encoding and are dropped, so automata built from these sequences never accept invalid UTF-8.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ByteSeq", "utf8_sequences"]

#: One byte-range sequence: the i-th byte lies in the i-th inclusive range.
ByteSeq = tuple[tuple[int, int], ...]

_SURROGATES = (0xD800, 0xDFFF)
#: The largest code point encoded in 1, 2 and 3 bytes.
_LENGTH_BOUNDS = (0x7F, 0x7FF, 0xFFFF)


def utf8_sequences(ranges: Iterable[tuple[int, int]]) -> list[ByteSeq]:
    """Byte-range sequences matching exactly the UTF-8 encodings of the code points in `ranges`
    (disjoint inclusive ranges, as in a `CharClass`).

    The sequences come out in code point order; their first-byte ranges are pairwise equal or
    disjoint, so they form a deterministic trie.
    """
    out: list[ByteSeq] = []
    for lo, hi in ranges:
        for a, b in _drop_surrogates(lo, hi):
            for c, d in _by_length(a, b):
                _split(c, d, out)
    return out


def _drop_surrogates(lo: int, hi: int) -> list[tuple[int, int]]:
    s_lo, s_hi = _SURROGATES
    parts = [(lo, min(hi, s_lo - 1)), (max(lo, s_hi + 1), hi)]
    return [(a, b) for a, b in parts if a <= b]


def _by_length(lo: int, hi: int) -> list[tuple[int, int]]:
    """Split so that every code point of a piece has the same encoded length."""
    parts = []
    for bound in _LENGTH_BOUNDS:
        if lo <= bound < hi:
            parts.append((lo, bound))
            lo = bound + 1
    parts.append((lo, hi))
    return parts


def _split(lo: int, hi: int, out: list[ByteSeq]) -> None:
    """Split a same-length range until each piece is a product of byte ranges, then encode it."""
    n = len(chr(lo).encode("utf-8"))
    for i in range(1, n):
        low_bits = (1 << (6 * i)) - 1
        if lo & ~low_bits != hi & ~low_bits:
            if lo & low_bits:
                _split(lo, lo | low_bits, out)
                _split((lo | low_bits) + 1, hi, out)
                return
            if hi & low_bits != low_bits:
                _split(lo, (hi & ~low_bits) - 1, out)
                _split(hi & ~low_bits, hi, out)
                return
    out.append(tuple(zip(chr(lo).encode("utf-8"), chr(hi).encode("utf-8"), strict=True)))
