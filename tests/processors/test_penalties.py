"""Repetition penalty, no-repeat n-grams and minimum length against transformers' processors."""

import numpy as np
import pytest
import torch
from transformers import (
    MinNewTokensLengthLogitsProcessor,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)

from grammask.processors import GenerationContext, MinLength, NoRepeatNGram, RepetitionPenalty

RNG = np.random.default_rng(3)
LOGITS = RNG.standard_normal((5, 12)) * 4
# Few distinct ids, so n-grams repeat often.
SEQUENCES = RNG.integers(0, 6, size=(5, 14))


def oracle(processor, sequences: np.ndarray, logits: np.ndarray = LOGITS) -> np.ndarray:
    return processor(torch.from_numpy(sequences), torch.from_numpy(logits.copy())).numpy()


def run(processor, xp, sequences: np.ndarray, input_length: int | None = None, logits=LOGITS) -> np.ndarray:
    length = sequences.shape[1]
    ctx = GenerationContext(xp(sequences), length if input_length is None else input_length, length)
    return xp.host(processor.process(xp(logits), processor.init(len(sequences)), ctx)[0])


@pytest.mark.parametrize("penalty", [0.5, 1.0, 1.3, 4.0])
def test_repetition_penalty(xp, penalty):
    expected = oracle(RepetitionPenaltyLogitsProcessor(penalty), SEQUENCES)
    np.testing.assert_allclose(run(RepetitionPenalty(penalty), xp, SEQUENCES), expected)


def test_repetition_penalty_ignores_ids_outside_the_logits(xp):
    sequences = np.array([[-1, 3, 50, 3]])
    got = run(RepetitionPenalty(2.0), xp, sequences, logits=LOGITS[:1])
    changed = np.flatnonzero(got[0] != LOGITS[0])
    assert changed.tolist() == [3]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("length", [1, 3, 14])
def test_no_repeat_ngram(xp, n, length):
    sequences = SEQUENCES[:, :length]
    expected = oracle(NoRepeatNGramLogitsProcessor(n), sequences)
    got = run(NoRepeatNGram(n), xp, sequences)
    assert np.array_equal(got, expected)
    if n == 2 and length == 14:
        assert np.isinf(got).any(), "the data must exercise the ban"


def test_no_repeat_ngram_bans_the_continuation(xp):
    got = run(NoRepeatNGram(3), xp, np.array([[1, 2, 3, 9, 1, 2]]), logits=LOGITS[:1])
    assert np.flatnonzero(np.isinf(got[0])).tolist() == [3]


@pytest.mark.parametrize("generated", [0, 2, 3, 5])
def test_min_length(xp, generated):
    prompt = 4
    sequences = SEQUENCES[:, : prompt + generated]
    processor = MinNewTokensLengthLogitsProcessor(prompt, 3, eos_token_id=[2, 7])
    expected = oracle(processor, sequences)
    assert np.array_equal(run(MinLength(3, [2, 7]), xp, sequences, prompt), expected)


def test_min_length_with_eos_past_the_logits(xp):
    got = run(MinLength(1, 100), xp, SEQUENCES[:, :2], 2)
    assert np.array_equal(got, LOGITS)
