"""Temperature and truncation against transformers' warpers; softmax stability; sampling."""

import numpy as np
import pytest
import torch
from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from grammask.errors import GenerationError
from grammask.processors import GenerationContext, MinP, Temperature, TopK, TopP, greedy, masked_softmax, sample

# float64 logits: the oracle and grammask then agree to the last bit on which tokens pass a threshold.
LOGITS = np.random.default_rng(7).standard_normal((6, 300)) * 3
LOGITS[1, 10:200] = -np.inf  # a row already masked in part
CTX = GenerationContext.start(np.zeros((6, 2), dtype=np.int64))


def oracle(warper, logits: np.ndarray) -> np.ndarray:
    ids = torch.zeros((logits.shape[0], 2), dtype=torch.long)
    return warper(ids, torch.from_numpy(logits.copy())).numpy()


def run(processor, xp, logits=LOGITS):
    return xp.host(processor.process(xp(logits), None, CTX)[0])


@pytest.mark.parametrize("t", [0.3, 1.0, 2.5])
def test_temperature(xp, t):
    np.testing.assert_allclose(run(Temperature(t), xp), oracle(TemperatureLogitsWarper(t), LOGITS))


@pytest.mark.parametrize("k", [1, 5, 50, 299, 300, 1000])
def test_top_k(xp, k):
    assert np.array_equal(run(TopK(k), xp), oracle(TopKLogitsWarper(k), LOGITS))


@pytest.mark.parametrize("p", [0.01, 0.3, 0.9, 0.999, 1.0])
@pytest.mark.parametrize("keep", [1, 4])
def test_top_p(xp, p, keep):
    assert np.array_equal(run(TopP(p, keep), xp), oracle(TopPLogitsWarper(p, min_tokens_to_keep=keep), LOGITS))


@pytest.mark.parametrize("p", [0.0, 0.05, 0.5, 1.0])
@pytest.mark.parametrize("keep", [1, 7])
def test_min_p(xp, p, keep):
    got = run(MinP(p, keep), xp)
    if p == 0.0:
        assert np.array_equal(got, LOGITS)  # transformers rejects 0; it means "no truncation"
    else:
        assert np.array_equal(got, oracle(MinPLogitsWarper(p, min_tokens_to_keep=keep), LOGITS))


def test_truncation_keeps_every_tie(xp):
    logits = np.array([[3.0, 1.0, 1.0, 1.0, 0.0]])
    assert np.isfinite(run(TopK(2), xp, logits)).tolist() == [[True, True, True, True, False]]
    # mass above each of the tied tokens is 0.64 < 0.7, so all three stay
    assert np.isfinite(run(TopP(0.7), xp, logits)).tolist() == [[True, True, True, True, False]]


@pytest.mark.parametrize(
    "bad",
    [
        lambda: Temperature(0),
        lambda: Temperature(float("inf")),
        lambda: TopK(0),
        lambda: TopP(0),
        lambda: TopP(1.5),
        lambda: MinP(-0.1),
        lambda: TopP(0.5, 0),
    ],
)
def test_invalid_parameters(bad):
    with pytest.raises(ValueError):
        bad()


def test_masked_softmax_is_stable(xp):
    logits = np.array(
        [
            [1e30, -1e30, 0.0, -np.inf],
            [-np.inf, -np.inf, 5.0, -np.inf],
            [-np.inf] * 4,
            [np.inf, 0.0, np.inf, -np.inf],
            [-1e30, -1e30 + 1e23, -np.inf, -np.inf],
        ],
        dtype=np.float32,
    )
    probs = xp.host(masked_softmax(xp(logits)))
    assert np.isfinite(probs).all()
    np.testing.assert_allclose(probs[:2], [[1, 0, 0, 0], [0, 0, 1, 0]])
    assert (probs[2] == 0).all()
    np.testing.assert_allclose(probs[3], [0.5, 0, 0.5, 0])
    np.testing.assert_allclose(probs[4].sum(), 1, rtol=1e-6)


def test_masked_softmax_matches_torch_and_upcasts_half(xp):
    probs = xp.host(masked_softmax(xp(LOGITS.astype(np.float16))))
    assert probs.dtype == np.float32
    np.testing.assert_allclose(probs, torch.softmax(torch.from_numpy(LOGITS.astype(np.float16)).float(), -1), atol=1e-6)


def test_greedy_takes_the_first_maximum(xp):
    logits = np.array([[0.0, 2.0, 2.0], [-np.inf, -np.inf, -1.0]], dtype=np.float32)
    assert xp.host(greedy(xp(logits))).tolist() == [1, 2]


def test_fully_masked_row_is_reported(xp):
    logits = np.array([[0.0, 1.0], [-np.inf, -np.inf]], dtype=np.float32)
    with pytest.raises(GenerationError, match="row 1: every logit is -inf"):
        greedy(xp(logits))
    with pytest.raises(GenerationError, match="row 1: no token has positive probability"):
        sample(masked_softmax(xp(logits)), xp.generator(0))


def test_seeded_sampling_is_reproducible(xp):
    probs = masked_softmax(xp(np.tile(LOGITS, (20, 1))))
    first = xp.host(sample(probs, xp.generator(123)))
    assert np.array_equal(first, xp.host(sample(probs, xp.generator(123))))
    assert np.array_equal(first, xp.host(sample(probs, 123)))
    assert not np.array_equal(first, xp.host(sample(probs, xp.generator(124))))


def test_masked_tokens_are_never_drawn(xp):
    logits = np.zeros((4000, 64), dtype=np.float32)
    logits[:, 1::2] = -np.inf
    logits[:, 0] = -np.inf
    logits[:, 62] = 8.0  # 99% of the mass on one token, and still never a masked token
    drawn = xp.host(sample(masked_softmax(xp(logits)), xp.generator(5)))
    assert (drawn % 2 == 0).all() and (drawn != 0).all()
    assert set(np.unique(drawn)) - {62}, "some mass off the top token is drawn too"


def chi_square_critical(df: int) -> float:
    """Upper 0.1% point of chi-square (Wilson-Hilferty approximation)."""
    z = 3.0902
    return df * (1 - 2 / (9 * df) + z * np.sqrt(2 / (9 * df))) ** 3


def test_masking_does_not_distort_sampling(xp):
    """Among allowed tokens the draws follow the model's probabilities, renormalised."""
    rng = np.random.default_rng(11)
    logits = rng.standard_normal(40).astype(np.float32)
    allowed = rng.random(40) < 0.5
    masked = np.where(allowed, logits, -np.inf)
    draws = 40_000
    drawn = xp.host(sample(masked_softmax(xp(np.tile(masked, (draws, 1)))), xp.generator(3)))
    expected = np.exp(logits.astype(np.float64)) * allowed
    expected *= draws / expected.sum()
    counts = np.bincount(drawn, minlength=40)
    assert counts[~allowed].sum() == 0
    chi2 = (((counts - expected) ** 2)[allowed] / expected[allowed]).sum()
    assert chi2 < chi_square_critical(int(allowed.sum()) - 1)
