"""Piece -> bytes decoding per tokenizer family, checked against plain per-character references."""

import pytest

from grammask import assets
from grammask.vocab.decode import (
    byte_fallback_value,
    byte_level_alphabet,
    decode_byte_level,
    decode_metaspace,
    end_of_generation_ids,
)
from grammask.vocab.gguf import read_gguf_metadata

TO_BYTE = {ch: b for b, ch in byte_level_alphabet().items()}


def reference_byte_level(piece: bytes) -> bytes:
    """Character by character, as Hugging Face's ByteLevel decoder does it."""
    to_byte = TO_BYTE
    text = piece.decode("utf-8", "surrogateescape")
    if all(ch in to_byte for ch in text):
        return bytes(to_byte[ch] for ch in text)
    return piece


def test_alphabet_is_gpt2s():
    alphabet = byte_level_alphabet()
    assert sorted(alphabet) == list(range(256))
    assert len(set(alphabet.values())) == 256
    assert alphabet[ord(" ")] == "Ġ" and alphabet[ord("\n")] == "Ċ" and alphabet[0] == "Ā"
    assert alphabet[ord("a")] == "a" and alphabet[0xAD] == "Ń" and alphabet[0xFF] == "ÿ"


@pytest.mark.parametrize("name", ["qwen2", "command-r", "mpt"])
def test_byte_level_matches_reference_on_real_pieces(name):
    """Every piece of real vocabularies (added tokens with spaces or `<|...|>` included)."""
    meta = read_gguf_metadata(assets.vocab_gguf_path(name), skip={"tokenizer.ggml.merges"})
    pieces = meta["tokenizer.ggml.tokens"]
    decoded = decode_byte_level(pieces)
    wrong = [i for i, p in enumerate(pieces) if decoded[i] != reference_byte_level(p)]
    assert len(decoded) == len(pieces) and not wrong, wrong[:10]


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        ([b"\xc4\xa0hello", b"\xc4\x8a"], [b" hello", b"\n"]),  # Ġhello, Ċ
        ([b"\xc3\x83\xc2\xb8"], [b"\xc3\xb8"]),  # Ã¸ is the two bytes of ø
        ([b"<|im_start|>", b"   ", b"a\xc2\xa0b"], [b"<|im_start|>", b"   ", b"a\xc2\xa0b"]),  # not encoded
        ([b"", b"x", b""], [b"", b"x", b""]),
        ([], []),
        # Not valid UTF-8, or a piece cut inside a character: each piece is taken alone.
        ([b"\xff", b"a", b"\x80"], [b"\xff", b"a", b"\x80"]),
        ([b"\xe2", b"\x96\x81", b"\xc4\xa0"], [b"\xe2", b"\x96\x81", b" "]),
    ],
)
def test_byte_level_cases(pieces, expected):
    assert decode_byte_level(pieces) == expected
    assert [reference_byte_level(p) for p in pieces] == expected


def test_metaspace():
    assert decode_metaspace(["▁▁x▁".encode(), b"plain", "é".encode()]) == [b"  x ", b"plain", "é".encode()]


@pytest.mark.parametrize(
    ("piece", "value"),
    [("<0x00>", 0), ("<0x0A>", 10), ("<0xff>", 255), ("<0x100>", None), ("<0xG0>", None), ("0x41", None)],
)
def test_byte_fallback_value(piece, value):
    assert byte_fallback_value(piece) == value


def test_end_of_generation_ids():
    added = {5: "<|im_end|>", 9: "<|im_start|>", 2: "<|eot_id|>", 7: "<turn|>"}
    assert end_of_generation_ids(added) == [2, 5, 7]
