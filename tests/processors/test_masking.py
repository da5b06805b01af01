"""apply_token_bitmask against a bit-by-bit reference, on every backend."""

import numpy as np
import pytest
import torch

from grammask.bitmask import allocate_bitmask
from grammask.processors import apply_token_bitmask


def reference(logits: np.ndarray, bitmask: np.ndarray) -> np.ndarray:
    out = logits.copy()
    words = bitmask.shape[-1]
    for r in range(out.shape[0]):
        for t in range(out.shape[1]):
            word = int(bitmask[r % bitmask.shape[0], t // 32]) if t < 32 * words else 0
            if not (word >> (t % 32)) & 1:
                out[r, t] = -np.inf
    return out


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 100, 1000])
@pytest.mark.parametrize("width_delta", [-5, 0, 40])
def test_matches_reference(xp, vocab, width_delta):
    rng = np.random.default_rng(vocab)
    width = max(1, vocab + width_delta)
    bitmask = rng.integers(-(2**31), 2**31, size=(3, (vocab + 31) // 32), dtype=np.int64).astype(np.int32)
    logits = rng.standard_normal((3, width)).astype(np.float32)
    got = xp.host(apply_token_bitmask(xp(logits), xp(bitmask)))
    assert np.array_equal(got, reference(logits, bitmask))


def test_one_row_bitmask_broadcasts_and_input_is_untouched(xp):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 70)).astype(np.float32)
    bitmask = np.array([0b1011, 1 << 31, 1 << 5], dtype=np.uint32).view(np.int32)
    data = xp(logits)
    got = xp.host(apply_token_bitmask(data, xp(bitmask)))
    assert np.array_equal(got, reference(logits, bitmask[None, :]))
    assert np.array_equal(np.isfinite(got[0]).nonzero()[0], [0, 1, 3, 63, 69])
    assert np.array_equal(xp.host(data), logits)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_inplace_writes_into_the_logits(xp, dtype):
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((3, 90)).astype(dtype)
    logits[0, 0] = np.nan
    bitmask = rng.integers(-(2**31), 2**31, size=(3, 3), dtype=np.int64).astype(np.int32)
    bitmask[0, 0] &= ~1  # the NaN logit is masked: it becomes -inf
    data = xp(logits)
    out = apply_token_bitmask(data, xp(bitmask), inplace=True)
    assert out is data
    assert np.array_equal(xp.host(data), reference(logits, bitmask))


def test_one_dimensional_logits(xp):
    logits = np.arange(40, dtype=np.float32)
    got = xp.host(apply_token_bitmask(xp(logits), xp(np.array([1 << 5, 1 << 2], dtype=np.int32))))
    assert np.flatnonzero(np.isfinite(got)).tolist() == [5, 34]


def test_all_allowed_bitmask_changes_nothing_inside_the_vocabulary(xp):
    logits = np.random.default_rng(1).standard_normal((2, 100)).astype(np.float32)
    got = xp.host(apply_token_bitmask(xp(logits), xp(allocate_bitmask(2, 100))))
    assert np.array_equal(got[:, :100], logits)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_torch_dtype_is_kept(dtype):
    logits = torch.randn(2, 64, dtype=dtype)
    out = apply_token_bitmask(logits, torch.tensor([[1, 0], [0, 1]], dtype=torch.int32))
    assert out.dtype == dtype
    assert torch.isfinite(out).sum().item() == 2


def test_mismatched_rows_raise():
    with pytest.raises(ValueError, match=r"bitmask of shape \(2, 1\) does not fit logits of shape \(3, 32\)"):
        apply_token_bitmask(np.zeros((3, 32), np.float32), np.zeros((2, 1), np.int32))
