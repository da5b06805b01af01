"""Tokenizer-family knowledge shared by the loaders: how a vocabulary piece becomes bytes, and
which tokens end generation.

Two encodings of token text cover the tokenizers grammask reads:

- byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM, ...): every byte is written as one printable
  character of a fixed 256-character alphabet (space is `Ġ`, newline is `Ċ`);
- SentencePiece style (Llama 2, Phi-3, Gemma, T5): `▁` (U+2581) stands for a space and the
  pieces `<0x00>` .. `<0xFF>` (byte fallback) stand for one raw byte each; everything else is
  the UTF-8 of the piece.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "END_OF_GENERATION_TEXTS",
    "LoadedVocab",
    "byte_fallback_value",
    "byte_level_alphabet",
    "decode_byte_level",
    "decode_metaspace",
    "end_of_generation_ids",
]

#: Texts of control tokens that end a turn in common chat formats. llama.cpp keeps the same list
#: (metadata rarely names them): `<|eot_id|>` and `<|eom_id|>` (Llama 3), `<|im_end|>` (ChatML),
#: `<|end|>` (Phi-3), `<end_of_turn>` / `<turn|>` (Gemma), ...
END_OF_GENERATION_TEXTS = frozenset(
    {
        "<|eot_id|>",
        "<|eom_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<end_of_turn>",
        "<turn|>",
        "<|endoftext|>",
        "<|end_of_text|>",
        "<EOT>",
        "_<EOT>",
        "<end_of_utterance>",
    }
)

_METASPACE = "\u2581"
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


class LoadedVocab(NamedTuple):
    """What a loader extracts from a tokenizer: the arguments of `Vocabulary`."""

    token_bytes: list[bytes]
    special_ids: list[int]
    eos_ids: list[int]
    bos_id: int | None
    name: str


def byte_level_alphabet() -> dict[int, str]:
    """GPT-2's byte -> character map: printable Latin-1 bytes stand for themselves, the other 68
    bytes (controls, space, DEL, NBSP, soft hyphen, ...) take U+0100 onwards in byte order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    shifted = sorted(set(range(256)) - set(printable))
    table = {b: chr(b) for b in printable}
    table.update({b: chr(0x100 + i) for i, b in enumerate(shifted)})
    return table


_ALPHABET = byte_level_alphabet()
# str.translate table: alphabet character -> the Latin-1 character of its byte.
_TO_LATIN1 = {ord(ch): chr(b) for b, ch in _ALPHABET.items()}
_OUTSIDE_ALPHABET = re.compile("[^" + re.escape("".join(_ALPHABET.values())) + "]")


def decode_byte_level(pieces: Sequence[bytes]) -> list[bytes]:
    """The bytes of byte-level BPE pieces, given as their UTF-8.

    A piece with a character outside the alphabet was never byte-encoded (an added token such as
    `<|im_start|>`, or a run of spaces): it stands for its own UTF-8, as in Hugging Face's decoder.
    Vectorised: all pieces are joined, decoded, translated and encoded to Latin-1 at once; each
    alphabet character is one output byte, so a piece's slice of the result starts at its
    character offset.
    """
    text, ends = _decode_joined(pieces)
    flat = text.translate(_TO_LATIN1).encode("latin-1", "replace")
    out = [flat[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=False)]
    positions = [m.start() for m in _OUTSIDE_ALPHABET.finditer(text)]
    for i in np.unique(np.searchsorted(ends, positions, side="right")).tolist():
        out[i] = pieces[i]
    return out


def _decode_joined(pieces: Sequence[bytes]) -> tuple[str, list[int]]:
    """All pieces decoded as one string, and the character offset where each piece ends.

    Fast path: when the joined bytes are valid UTF-8 and no piece starts inside a character
    (every piece is then valid on its own), offsets are counts of UTF-8 lead bytes. Otherwise
    each piece is decoded alone, invalid bytes kept as lone surrogates (outside the alphabet).
    """
    joined = b"".join(pieces)
    byte_ends = np.cumsum(np.fromiter(map(len, pieces), np.int64, len(pieces)))
    lead = (np.frombuffer(joined, np.uint8) & 0xC0) != 0x80
    starts = byte_ends[:-1][byte_ends[:-1] < len(joined)]
    try:
        text = joined.decode("utf-8")
        aligned = bool(lead[starts].all())
    except UnicodeDecodeError:
        aligned = False
    if aligned:
        leads = np.zeros(len(joined) + 1, np.int64)
        np.cumsum(lead, out=leads[1:])
        return text, leads[byte_ends].tolist()
    texts = [p.decode("utf-8", "surrogateescape") for p in pieces]
    return "".join(texts), np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts))).tolist()


def decode_metaspace(pieces: Iterable[bytes]) -> list[bytes]:
    """SentencePiece-style UTF-8 pieces with `▁` turned back into a space (byte fallback pieces
    are the caller's business: which pieces are bytes depends on the tokenizer's metadata)."""
    marker, space = _METASPACE.encode("utf-8"), b" "
    return [p.replace(marker, space) for p in pieces]


def byte_fallback_value(piece: str) -> int | None:
    """The byte a `<0xNN>` piece stands for, or None for any other piece."""
    m = _BYTE_PIECE.fullmatch(piece)
    return int(m.group(1), 16) if m else None


def end_of_generation_ids(added: Mapping[int, str]) -> list[int]:
    """Ids among `added` (id -> text of the control and added tokens) whose text ends a turn.

    Like llama.cpp, such a token ends generation and is special even when its tokenizer forgot
    to mark it as a control token.
    """
    return sorted(i for i, text in added.items() if text in END_OF_GENERATION_TEXTS)
