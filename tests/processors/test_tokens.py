"""Suppressed tokens, forbidden characters on the real Llama 3 vocabulary, forced tokens."""

import numpy as np
import pytest
import torch
from transformers import SuppressTokensLogitsProcessor

from grammask.processors import ForbidCharacters, ForceBOS, ForceEOS, ForceTokens, GenerationContext, SuppressTokens

LOGITS = np.random.default_rng(5).standard_normal((3, 40)).astype(np.float32)


def run(processor, xp, generated: int = 0, logits: np.ndarray = LOGITS) -> np.ndarray:
    sequences = np.zeros((logits.shape[0], 2 + generated), dtype=np.int64)
    ctx = GenerationContext(xp(sequences), 2, 2 + generated)
    return xp.host(processor.process(xp(logits), processor.init(logits.shape[0]), ctx)[0])


def test_suppress_tokens(xp):
    ids = [0, 5, 39]
    oracle = SuppressTokensLogitsProcessor(ids)
    expected = oracle(torch.zeros((3, 2), dtype=torch.long), torch.from_numpy(LOGITS.copy())).numpy()
    assert np.array_equal(run(SuppressTokens(ids + [500]), xp), expected)


def test_negative_ids_are_rejected():
    with pytest.raises(ValueError, match=r"non-negative, got \[-1\]"):
        SuppressTokens([3, -1])


def test_forbid_e_on_llama3(vocab_llama3):
    forbid = ForbidCharacters("e", vocab_llama3)
    forbidden = set(forbid.forbidden_token_ids.tolist())
    # Independent check: 'e' never occurs inside a multi-byte UTF-8 sequence, so decoding with
    # replacement characters keeps exactly the tokens whose bytes hold an 'e'.
    expected = {
        t
        for t, text in enumerate(vocab_llama3.token_bytes)
        if not vocab_llama3.is_special[t] and "e" in text.decode("utf-8", errors="replace")
    }
    assert forbidden == expected
    assert vocab_llama3.token_id("the") in forbidden and vocab_llama3.token_id("Eat") not in forbidden
    assert 128009 not in forbidden and "e" in vocab_llama3.token_bytes[128009].decode()  # <|eot_id|> is special


def test_forbid_e_masks_the_logits(xp, vocab_llama3):
    forbid = ForbidCharacters("e", vocab_llama3)
    logits = np.random.default_rng(0).standard_normal((2, vocab_llama3.size)).astype(np.float32)
    got = run(forbid, xp, logits=logits)
    assert np.array_equal(np.flatnonzero(np.isinf(got[1])), forbid.forbidden_token_ids)
    assert np.array_equal(got[np.isfinite(got)], logits[np.isfinite(got)])


def test_forbid_multibyte_character(vocab_llama3):
    forbidden = ForbidCharacters("é", vocab_llama3).forbidden_token_ids
    texts = [vocab_llama3.token_bytes[t] for t in forbidden]
    assert texts and all("é".encode() in t for t in texts)
    assert vocab_llama3.token_id("é") in forbidden
    # Byte tokens holding half of é's encoding stay allowed: the documented limit of token masks.
    half = vocab_llama3.token_bytes.index(b"\xc3")
    assert half not in forbidden


def test_force_tokens_at_positions(xp):
    forced = ForceTokens({0: 4, 2: [1, 7]})
    first = run(forced, xp, 0)
    assert (np.flatnonzero(np.isfinite(first[0])) == [4]).all()
    assert np.array_equal(first[:, 4], LOGITS[:, 4])
    assert np.array_equal(run(forced, xp, 1), LOGITS)
    assert np.flatnonzero(np.isfinite(run(forced, xp, 2)[2])).tolist() == [1, 7]


def test_force_bos_and_eos(xp):
    assert np.flatnonzero(np.isfinite(run(ForceBOS(3), xp, 0)[1])).tolist() == [3]
    assert np.array_equal(run(ForceBOS(3), xp, 1), LOGITS)
    eos = ForceEOS(5, [9, 11])
    assert np.array_equal(run(eos, xp, 3), LOGITS)
    assert np.flatnonzero(np.isfinite(run(eos, xp, 4)[0])).tolist() == [9, 11]
    assert repr(eos) == "ForceEOS(5, [9, 11])"


def test_forced_token_already_masked_stays_masked(xp):
    logits = LOGITS.copy()
    logits[:, 4] = -np.inf
    assert np.isinf(run(ForceTokens({0: 4}), xp, 0, logits)).all()
