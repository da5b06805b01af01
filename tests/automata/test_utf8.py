"""UTF-8 byte-range sequences: exactly the encodings of the code points, never a surrogate."""

from hypothesis import given
from hypothesis import strategies as st

from grammask.automata.utf8 import utf8_sequences
from grammask.ir import regex as rx

LIMIT = 0x10FFFF


def covers(seq: tuple[tuple[int, int], ...], data: bytes) -> bool:
    return len(seq) == len(data) and all(lo <= b <= hi for (lo, hi), b in zip(seq, data, strict=True))


def test_boundaries_of_each_encoding_length() -> None:
    assert utf8_sequences([(0, 0x7F)]) == [((0, 0x7F),)]
    assert utf8_sequences([(0x80, 0x7FF)]) == [((0xC2, 0xDF), (0x80, 0xBF))]
    assert utf8_sequences([(0x800, 0xFFFF)]) == [
        ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
        ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
        ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
    ]
    assert utf8_sequences([(0x10000, LIMIT)]) == [
        ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
    ]


def test_surrogates_are_dropped() -> None:
    assert utf8_sequences([(0xD800, 0xDFFF)]) == []
    seqs = utf8_sequences([(0xD7FF, 0xE000)])
    assert [bytes(lo for lo, _ in s) for s in seqs] == ["\ud7ff".encode(), "\ue000".encode()]


code_points = st.integers(0, LIMIT)


@given(
    st.lists(st.tuples(code_points, code_points).map(sorted), min_size=1, max_size=3),
    st.lists(code_points, max_size=50),
)
def test_sequences_match_exactly_the_encodings(ranges: list[list[int]], probes: list[int]) -> None:
    ranges = rx.char_class(ranges).ranges  # disjoint, as the function expects
    seqs = utf8_sequences(ranges)
    # Probe the range ends and their neighbours as well as random code points.
    probes += [c + d for lo, hi in ranges for c in (lo, hi) for d in (-1, 0, 1) if 0 <= c + d <= LIMIT]
    for cp in probes:
        inside = any(lo <= cp <= hi for lo, hi in ranges) and not 0xD800 <= cp <= 0xDFFF
        hits = sum(covers(s, chr(cp).encode("utf-8", "surrogatepass")) for s in seqs)
        assert hits == (1 if inside else 0), hex(cp)


@given(st.lists(st.tuples(code_points, code_points).map(sorted), min_size=1, max_size=3))
def test_every_sequence_is_valid_utf8(ranges: list[list[int]]) -> None:
    for seq in utf8_sequences([tuple(r) for r in ranges]):
        for corner in (bytes(lo for lo, _ in seq), bytes(hi for _, hi in seq)):
            cp = ord(corner.decode("utf-8"))  # raises on invalid UTF-8, surrogates included
            assert any(lo <= cp <= hi for lo, hi in ranges)
