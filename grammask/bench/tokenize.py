"""The Llama 3 tokenizer, rebuilt from the vocabulary-only `llama-bpe` GGUF.

The benchmarks walk each engine through the tokens a real model would emit for a text, so they
need the real tokenization, not a greedy one. The GGUF holds the byte-level BPE vocabulary and its
merges; `tokenizers` (installed with transformers, a bench-only dependency) runs them behind the
Llama 3 pre-tokenizer split. `tests/bench/test_tokenize.py` checks the result against llama.cpp's
own test vectors (`ggml-vocab-llama-bpe.gguf.inp/.out`).
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from grammask.vocab.gguf import read_gguf_metadata

__all__ = ["LLAMA3_SPLIT", "Llama3Tokenizer"]

#: The Llama 3 pre-tokenizer: contractions, letters with one leading non-letter, numbers in runs of
#: up to three digits, punctuation runs, newlines and other whitespace.
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class Llama3Tokenizer:
    """Text -> Llama 3 token ids, without special tokens (they never come from plain text)."""

    def __init__(self, gguf_path: str | PathLike[str]) -> None:
        try:
            from tokenizers import Regex, Tokenizer, models, pre_tokenizers
        except ImportError as exc:
            raise ImportError("the benchmarks need `tokenizers`: pip install tokenizers") from exc

        meta = read_gguf_metadata(gguf_path, skip=("tokenizer.ggml.token_type",))
        pre = meta.get("tokenizer.ggml.pre", b"").decode()
        if pre != "llama-bpe":
            raise ValueError(f"{gguf_path}: pre-tokenizer {pre!r}, expected 'llama-bpe'")
        tokens = [t.decode("utf-8") for t in meta["tokenizer.ggml.tokens"]]
        merges = [tuple(m.decode("utf-8").split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
        # Llama 3 looks a whole pre-token up in the vocabulary before merging (ignore_merges).
        model = models.BPE({t: i for i, t in enumerate(tokens)}, merges, ignore_merges=True)
        tokenizer = Tokenizer(model)
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        self._tokenizer: Any = tokenizer

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def encode_bytes(self, data: bytes) -> list[int]:
        """Token ids for raw bytes; invalid UTF-8 is replaced (only peers' forcing uses this)."""
        return self.encode(data.decode("utf-8", "replace"))
