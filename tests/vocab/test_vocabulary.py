"""`Vocabulary`: special and padding ids, lookups, resizing, fingerprint, load time."""

import time

import numpy as np
import pytest

from grammask import assets
from grammask.errors import VocabularyError
from grammask.vocab import Vocabulary


def test_special_ids_and_mask(vocab_qwen2):
    v = vocab_qwen2
    assert v.special_ids.dtype == np.int32 and v.special_ids.tolist() == [151643, 151644, 151645]
    assert v.is_special.dtype == bool and v.is_special.shape == (v.size,)
    assert np.flatnonzero(v.is_special).tolist() == v.special_ids.tolist()
    assert v.token_bytes[151644] == b"<|im_start|>"


def test_token_id(vocab_llama3):
    v = vocab_llama3
    assert v.token_id("<|eot_id|>") == v.token_id(b"<|eot_id|>") == 128009
    hello = v.token_id(" hello")
    assert v.token_bytes[hello] == b" hello" and not v.is_special[hello]
    assert v.token_bytes[v.token_id("é")] == "é".encode()
    with pytest.raises(KeyError, match="zzzzzzzzzzzz"):
        v.token_id("zzzzzzzzzzzz")


def test_token_id_prefers_specials_then_lowest_id(vocab_llama_spm):
    assert vocab_llama_spm.token_id(" ") == 3 + 0x20  # <0x20> (35) before ▁ (29871)
    v = Vocabulary([b"x", b"<s>", b"x", b"<s>"], special_ids=[3])
    assert v.token_id("x") == 0 and v.token_id("<s>") == 3


def test_with_size_pads(vocab_qwen2):
    wide = vocab_qwen2.with_size(152_064)  # Qwen2 models' embedding width
    assert wide.size == 152_064 and len(wide.token_bytes) == 151_936
    assert wide.is_special[151_936:].all() and not wide.is_special[:151_643].any()
    assert wide.special_ids.tolist() == vocab_qwen2.special_ids.tolist()
    assert wide.eos_ids == vocab_qwen2.eos_ids and wide.bos_id == vocab_qwen2.bos_id
    assert wide.fingerprint != vocab_qwen2.fingerprint
    with pytest.raises(VocabularyError, match="size 100 < 151936"):
        vocab_qwen2.with_size(100)


def test_fingerprint():
    path = assets.vocab_gguf_path("llama-spm")
    a, b = Vocabulary.from_gguf(path), Vocabulary.from_gguf(path)
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 64
    assert Vocabulary(a.token_bytes, special_ids=a.special_ids, eos_ids=[2, 1]).fingerprint != a.fingerprint
    moved = list(a.token_bytes)
    moved[100], moved[101] = moved[101], moved[100]
    assert Vocabulary(moved, special_ids=a.special_ids, eos_ids=a.eos_ids).fingerprint != a.fingerprint
    # Lengths are hashed too: the same joined bytes split differently differ.
    assert Vocabulary([b"ab", b"c"]).fingerprint != Vocabulary([b"a", b"bc"]).fingerprint


def test_empty_tokens_and_eos_are_special():
    v = Vocabulary([b"a", b"", b"</s>"], eos_ids=[2], bos_id=0)
    assert v.is_special.tolist() == [False, True, True]
    assert v.special_ids.tolist() == [1, 2] and v.eos_ids == (2,) and v.bos_id == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"special_ids": [3]}, "special token id 3 is not in 0..2"),
        ({"eos_ids": [-1]}, "EOS token id -1"),
        ({"bos_id": 7}, "BOS token id 7"),
        ({"size": 2}, "size 2 < 3 tokens"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(VocabularyError, match=message):
        Vocabulary([b"a", b"b", b"c"], name="tiny", **kwargs)


def test_trie_is_built_once(vocab_gpt2):
    assert vocab_gpt2.trie is vocab_gpt2.trie


def test_load_time():
    """Target: 0.5 s for Llama 3 (128k tokens) with its trie; the bound leaves room for a busy
    machine, and still catches a per-character Python decoder."""
    start = time.perf_counter()
    _ = Vocabulary.from_gguf(assets.vocab_gguf_path("llama-bpe")).trie
    assert time.perf_counter() - start < 1.5
