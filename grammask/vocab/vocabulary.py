"""`Vocabulary`: what every token id adds to the text, which ids are special, which end generation.

A vocabulary is the only thing the engine knows about a tokenizer. Token ids index the model's
logits; `size` is the width of those logits, which may exceed the tokenizer's own count (models
pad their embedding matrix), and the extra ids are padding that never matches anything.
Special tokens (control tokens such as `<|eot_id|>`) add no text: a grammar reaches them only
through an explicit `Token` item, or as end of generation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import cached_property
from os import PathLike
from typing import Any

import numpy as np

from grammask.errors import VocabularyError
from grammask.vocab import gguf, huggingface
from grammask.vocab.decode import LoadedVocab
from grammask.vocab.trie import TokenTrie

__all__ = ["Vocabulary"]


class Vocabulary:
    """Token id -> the exact bytes the token adds to the text, plus special and EOS ids.

    `token_bytes[t]` is the text of token t; for a special token it is the token's literal text
    (`b"<|eot_id|>"`), kept for lookups and display, never matched against grammar text.
    `is_special` marks the special ids, every padding id (>= `len(token_bytes)`) and every token
    with no bytes at all (it could be emitted anywhere forever). EOS tokens are always special.
    Instances are immutable; derived structures (`trie`, `fingerprint`) are built once, lazily.
    """

    def __init__(
        self,
        token_bytes: Sequence[bytes],
        *,
        special_ids: Iterable[int] = (),
        eos_ids: Iterable[int] = (),
        bos_id: int | None = None,
        size: int | None = None,
        name: str = "",
    ) -> None:
        self.token_bytes: list[bytes] = [bytes(b) for b in token_bytes]
        n = len(self.token_bytes)
        self.size: int = n if size is None else int(size)
        if self.size < n:
            raise VocabularyError(f"vocabulary {name!r}: size {self.size} < {n} tokens")
        self.name = name
        self.eos_ids: tuple[int, ...] = tuple(sorted({int(i) for i in eos_ids}))
        self.bos_id = None if bos_id is None else int(bos_id)
        special = [int(i) for i in special_ids]
        checked = {"special": special, "EOS": self.eos_ids, "BOS": [] if self.bos_id is None else [self.bos_id]}
        for what, ids in checked.items():
            bad = [i for i in ids if not 0 <= i < n]
            if bad:
                raise VocabularyError(f"vocabulary {name!r}: {what} token id {bad[0]} is not in 0..{n - 1}")
        is_special = np.ones(self.size, dtype=bool)
        is_special[:n] = np.fromiter(map(len, self.token_bytes), np.int64, n) == 0
        is_special[special] = True
        is_special[list(self.eos_ids)] = True
        is_special.flags.writeable = False
        self.is_special: np.ndarray = is_special
        special_ids_arr = np.flatnonzero(is_special[:n]).astype(np.int32)
        special_ids_arr.flags.writeable = False
        self.special_ids: np.ndarray = special_ids_arr

    # -- loaders --------------------------------------------------------------------------------

    @classmethod
    def from_gguf(cls, path: str | PathLike[str]) -> Vocabulary:
        """The vocabulary of a GGUF file (llama.cpp's format), read from its metadata only."""
        return cls._from_loaded(gguf.load_gguf_vocab(path))

    @classmethod
    def from_tokenizer_json(cls, path: str | PathLike[str]) -> Vocabulary:
        """The vocabulary of a Hugging Face `tokenizer.json` (with its sibling
        `tokenizer_config.json`, when there is one, for the EOS and BOS tokens)."""
        return cls._from_loaded(huggingface.load_tokenizer_json(path))

    @classmethod
    def from_huggingface(cls, tokenizer: Any) -> Vocabulary:
        """The vocabulary of a transformers tokenizer (fast or slow) or a `tokenizers.Tokenizer`."""
        return cls._from_loaded(huggingface.load_tokenizer(tokenizer))

    @classmethod
    def _from_loaded(cls, loaded: LoadedVocab) -> Vocabulary:
        return cls(
            loaded.token_bytes,
            special_ids=loaded.special_ids,
            eos_ids=loaded.eos_ids,
            bos_id=loaded.bos_id,
            name=loaded.name,
        )

    # -- derived ------------------------------------------------------------------------------

    def with_size(self, size: int) -> Vocabulary:
        """The same tokens with logits `size` wide (the extra ids are padding)."""
        return Vocabulary(
            self.token_bytes,
            special_ids=self.special_ids.tolist(),
            eos_ids=self.eos_ids,
            bos_id=self.bos_id,
            size=size,
            name=self.name,
        )

    @cached_property
    def trie(self) -> TokenTrie:
        """The prefix tree of the text tokens (built on first use)."""
        return TokenTrie(self)

    @cached_property
    def fingerprint(self) -> str:
        """Hex SHA-256 of everything that decides a token mask: bytes, specials, EOS ids, size."""
        h = hashlib.sha256()
        lengths = np.fromiter(map(len, self.token_bytes), np.int64, len(self.token_bytes))
        for part in (
            np.array([self.size, len(self.token_bytes)], np.int64),
            lengths,
            self.special_ids.astype(np.int64),
            np.array(self.eos_ids, np.int64),
        ):
            h.update(np.ascontiguousarray(part, dtype="<i8").tobytes())
            h.update(b"|")
        h.update(b"".join(self.token_bytes))
        return h.hexdigest()

    @cached_property
    def _ids_by_text(self) -> dict[bytes, int]:
        # Text tokens first (the lowest id wins among equal bytes), then special tokens on top,
        # so that a special token's literal always names the special token.
        table: dict[bytes, int] = {}
        is_special = self.is_special
        for ids in (np.flatnonzero(~is_special[: len(self.token_bytes)]), self.special_ids):
            for i in ids[::-1].tolist():
                table[self.token_bytes[i]] = i
        return table

    def token_id(self, text: str | bytes) -> int:
        """The id of the token whose text is exactly `text` (special tokens by their literal).

        Where several tokens share the text, a special token wins, then the lowest id.
        Raises KeyError when no token has that text.
        """
        key = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        try:
            return self._ids_by_text[key]
        except KeyError:
            raise KeyError(f"no token with text {key!r} in vocabulary {self.name!r}") from None

    def __repr__(self) -> str:
        n_special = len(self.special_ids)
        return (
            f"Vocabulary({self.name!r}, size={self.size}, tokens={len(self.token_bytes)}, "
            f"special={n_special}, eos={list(self.eos_ids)})"
        )
