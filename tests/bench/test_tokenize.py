"""The rebuilt Llama 3 tokenizer against llama.cpp's tokenization vectors for llama-bpe."""

from __future__ import annotations

import pytest

from grammask import assets
from grammask.bench.tokenize import Llama3Tokenizer

pytest.importorskip("tokenizers")

_SEPARATOR = "\n__ggml_vocab_test__\n"


def _vectors() -> list[tuple[str, list[int]]]:
    path = assets.vocab_gguf_path("llama-bpe")
    texts = path.with_name(path.name + ".inp").read_text(encoding="utf-8").split(_SEPARATOR)
    lines = path.with_name(path.name + ".out").read_text(encoding="utf-8").split("\n")
    # Both files end with a separator / newline, leaving one empty trailing entry.
    assert texts[-1] == "" and lines[-1] == ""
    assert len(texts) == len(lines)
    return [(t, [int(x) for x in line.split()]) for t, line in zip(texts[:-1], lines[:-1], strict=True)]


def test_matches_llama_cpp_vectors(tokenizer: Llama3Tokenizer) -> None:
    vectors = _vectors()
    assert len(vectors) > 40
    wrong = [(text, tokenizer.encode(text), ids) for text, ids in vectors if tokenizer.encode(text) != ids]
    assert wrong == []


def test_json_text_round_numbers_split_in_threes(tokenizer: Llama3Tokenizer) -> None:
    # "12345" is two pre-tokens ("123", "45"): digits never merge across the 3-digit split.
    ids = tokenizer.encode('{"a": 12345}')
    pieces = [tokenizer.encode(p) for p in ('{"', "a", '":', " ", "123", "45", "}")]
    assert len(ids) == 7
    assert ids == [p[0] for p in pieces]


def test_encode_bytes_equals_encode_for_utf8(tokenizer: Llama3Tokenizer) -> None:
    text = "naïve café 日本語"
    assert tokenizer.encode_bytes(text.encode()) == tokenizer.encode(text)


def test_rejects_other_pretokenizers() -> None:
    with pytest.raises(ValueError, match="pre-tokenizer"):
        Llama3Tokenizer(assets.vocab_gguf_path("qwen2"))
