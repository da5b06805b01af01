"""The few array operations the processors need, for numpy arrays and torch tensors alike.

`ops_for(x)` picks the implementation from the type of `x`. Torch is never imported here: a tensor
can only exist if torch is already loaded, so `sys.modules.get("torch")` tells the two apart and the
core keeps numpy as its only dependency. Torch operations stay on the tensor's device: host data
(a numpy bitmask, a precomputed token mask) is moved to the device once, never the logits to the host.
Every operation works on the last axis and returns a new array; inputs are not modified.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

__all__ = ["ArrayOps", "TokenMask", "is_torch", "ops_for"]

Array = Any  # np.ndarray or torch.Tensor


def is_torch(x: object) -> bool:
    """True when `x` is a torch tensor (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


class ArrayOps(Protocol):
    """Operations on `[batch, vocab]` float arrays and `[batch, length]` integer arrays."""

    def asarray(self, data: Array, like: Array) -> Array:
        """`data` (numpy or torch, any dtype) as the array type and device of `like`."""

    def where(self, cond: Array, x: Array, y: Array) -> Array:
        """`x` where `cond` holds, `y` elsewhere."""

    def keep(self, allowed: Array, x: Array, out: Array | None = None) -> Array:
        """`x` where `allowed` (boolean, broadcast) holds, -inf elsewhere: the hard mask. With
        `out` (which may be `x` itself), the result is written there."""

    def row_max(self, x: Array) -> Array:
        """Maximum of each row, shape `[batch, 1]`."""

    def minimum(self, a: Array, b: Array) -> Array:
        """Elementwise minimum (broadcasting)."""

    def kth_largest(self, x: Array, k: int) -> Array:
        """The k-th largest value of each row (k >= 1), shape `[batch, 1]`."""

    def sort_descending(self, x: Array) -> Array:
        """Each row sorted from largest to smallest."""

    def softmax(self, x: Array) -> Array:
        """Softmax over rows, in at least float32; a row of only -inf gives zeros."""

    def cumsum(self, x: Array) -> Array: ...

    def count_true(self, cond: Array) -> Array:
        """Number of true entries per row, shape `[batch, 1]` (integer)."""

    def take(self, x: Array, index: Array) -> Array:
        """`x[row, index[row]]` for `index` of shape `[batch, 1]`."""

    def token_flags(self, ids: Array, flags: Array | None, width: int) -> Array:
        """Boolean `[batch, width]` marking, per row, every id of `ids` whose flag is set (or every
        id if `flags` is None); ids outside `[0, width)` are ignored."""

    def windows(self, seq: Array, n: int) -> Array:
        """Sliding windows of length n over each row: `[batch, length - n + 1, n]`."""

    def unpack_bitmask(self, bitmask: Array, width: int, like: Array) -> Array:
        """Boolean `[rows, width]` on `like`'s device from a packed int32 bitmask `[rows, words]`
        (bit `t % 32` of word `t // 32`); positions past `32 * words` are False."""

    def alive(self, x: Array) -> Array:
        """Per row: does any entry exceed -inf (NaN counts as masked)? Stays on the device."""

    def stack(self, xs: list[Array]) -> Array:
        """The arrays stacked along a new first axis."""

    def argmax(self, x: Array) -> Array:
        """Index of the first maximum of each row."""

    def multinomial(self, probs: Array, generator: Any) -> Array:
        """One index per row drawn with probability `probs` (rows sum to 1, zeros never drawn)."""

    def to_host(self, x: Array) -> np.ndarray:
        """A numpy copy (this is where a GPU computation synchronises)."""


def _unpack_host(bitmask: np.ndarray, width: int) -> np.ndarray:
    """Unpack on the host: the little-endian bytes of the int32 words, bits in little order, are
    exactly the tokens in order."""
    words = np.ascontiguousarray(bitmask, dtype="<i4")
    if words.ndim == 1:
        words = words[None, :]
    bits = np.unpackbits(words.view(np.uint8), axis=-1, count=min(width, 32 * words.shape[-1]), bitorder="little").view(
        bool
    )
    if bits.shape[-1] < width:
        bits = np.pad(bits, ((0, 0), (0, width - bits.shape[-1])))
    return bits


class _NumpyOps:
    def asarray(self, data: Array, like: np.ndarray) -> np.ndarray:
        return data.cpu().numpy() if is_torch(data) else np.asarray(data)

    def where(self, cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.where(cond, x, y)

    def keep(self, allowed: np.ndarray, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        # Branch-free on the bit patterns: (x & all-ones-if-allowed) | (-inf & all-ones-if-not).
        # An irregular mask makes np.where mispredict on every token; this is several times faster.
        ints = np.dtype(f"i{x.dtype.itemsize}")
        ones = np.negative(np.asarray(allowed).astype(ints))
        result = np.bitwise_and(x.view(ints), ones, out=None if out is None else out.view(ints))
        np.bitwise_and(np.invert(ones, out=ones), np.array(-np.inf, dtype=x.dtype).view(ints), out=ones)
        np.bitwise_or(result, ones, out=result)
        return result.view(x.dtype) if out is None else out

    def row_max(self, x: np.ndarray) -> np.ndarray:
        return x.max(axis=-1, keepdims=True)

    def minimum(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b)

    def kth_largest(self, x: np.ndarray, k: int) -> np.ndarray:
        width = x.shape[-1]
        return np.partition(x, width - k, axis=-1)[..., width - k : width - k + 1]

    def sort_descending(self, x: np.ndarray) -> np.ndarray:
        return np.flip(np.sort(x, axis=-1), axis=-1)

    def softmax(self, x: np.ndarray) -> np.ndarray:
        x = x.astype(np.promote_types(x.dtype, np.float32), copy=False)
        x = np.minimum(x, np.finfo(x.dtype).max)
        top = x.max(axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0)  # a row of only -inf
        e = np.exp(x - top)
        total = e.sum(axis=-1, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)

    def cumsum(self, x: np.ndarray) -> np.ndarray:
        return np.cumsum(x, axis=-1)

    def count_true(self, cond: np.ndarray) -> np.ndarray:
        return cond.sum(axis=-1, keepdims=True)

    def take(self, x: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.take_along_axis(x, index, axis=-1)

    def token_flags(self, ids: np.ndarray, flags: np.ndarray | None, width: int) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64).reshape(ids.shape[0], -1)
        keep = (ids >= 0) & (ids < width)
        if flags is not None:
            keep &= np.asarray(flags).reshape(keep.shape)
        rows = np.broadcast_to(np.arange(ids.shape[0])[:, None], ids.shape)
        out = np.zeros((ids.shape[0], width), dtype=bool)
        out[rows[keep], ids[keep]] = True
        return out

    def windows(self, seq: np.ndarray, n: int) -> np.ndarray:
        return np.lib.stride_tricks.sliding_window_view(np.asarray(seq), n, axis=-1)

    def unpack_bitmask(self, bitmask: Array, width: int, like: np.ndarray) -> np.ndarray:
        return _unpack_host(self.asarray(bitmask, like), width)

    def alive(self, x: np.ndarray) -> np.ndarray:
        return np.asarray((x > -np.inf).any(axis=-1))

    def stack(self, xs: list[np.ndarray]) -> np.ndarray:
        return np.stack(xs)

    def argmax(self, x: np.ndarray) -> np.ndarray:
        return x.argmax(axis=-1)

    def multinomial(self, probs: np.ndarray, generator: Any) -> np.ndarray:
        rng = generator if isinstance(generator, np.random.Generator) else np.random.default_rng(generator)
        cdf = np.cumsum(probs.astype(np.float64), axis=-1)
        u = rng.random((probs.shape[0], 1)) * cdf[:, -1:]
        # The first index whose cumulative mass exceeds u has positive probability; rounding can
        # push u to the total, so clamp to the last token with positive probability.
        picked = (cdf <= u).sum(axis=-1)
        last = probs.shape[-1] - 1 - np.argmax(np.flip(probs, axis=-1) > 0, axis=-1)
        return np.minimum(picked, last)

    def to_host(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x)


class _TorchOps:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._numpy_floats = (torch.float16, torch.float32, torch.float64)

    def asarray(self, data: Array, like: Any) -> Any:
        t = data if is_torch(data) else self.torch.from_numpy(np.ascontiguousarray(data))
        return t.to(like.device)

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        return self.torch.where(cond, x, y)

    def keep(self, allowed: Any, x: Any, out: Any = None) -> Any:
        if x.device.type == "cpu" and x.dtype in self._numpy_floats:
            # Host tensors share memory with numpy, whose branch-free mask beats masked_fill.
            result = _NUMPY.keep(allowed.numpy(), x.detach().numpy(), None if out is None else out.detach().numpy())
            return self.torch.from_numpy(result) if out is None else out
        if out is None:
            return x.masked_fill(~allowed, float("-inf"))
        if out is not x:
            out.copy_(x)
        return out.masked_fill_(~allowed, float("-inf"))

    def row_max(self, x: Any) -> Any:
        return x.amax(dim=-1, keepdim=True)

    def minimum(self, a: Any, b: Any) -> Any:
        return self.torch.minimum(a, b)

    def kth_largest(self, x: Any, k: int) -> Any:
        return self.torch.topk(x, k, dim=-1).values[..., -1:]

    def sort_descending(self, x: Any) -> Any:
        return self.torch.sort(x, dim=-1, descending=True).values

    def softmax(self, x: Any) -> Any:
        torch = self.torch
        x = x.to(torch.promote_types(x.dtype, torch.float32))
        x = x.clamp_max(torch.finfo(x.dtype).max)
        top = x.amax(dim=-1, keepdim=True)
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
        e = torch.exp(x - top)
        total = e.sum(dim=-1, keepdim=True)
        return torch.where(total > 0, e / total.clamp_min(torch.finfo(e.dtype).tiny), torch.zeros_like(e))

    def cumsum(self, x: Any) -> Any:
        return x.cumsum(dim=-1)

    def count_true(self, cond: Any) -> Any:
        return cond.sum(dim=-1, keepdim=True)

    def take(self, x: Any, index: Any) -> Any:
        return x.gather(-1, index)

    def token_flags(self, ids: Any, flags: Any | None, width: int) -> Any:
        torch = self.torch
        ids = ids.long().reshape(ids.shape[0], -1)
        keep = (ids >= 0) & (ids < width)
        if flags is not None:
            keep &= flags.reshape(keep.shape)
        # scatter_add, not scatter: duplicate ids with different flags must not race.
        counts = torch.zeros((ids.shape[0], width), dtype=torch.int32, device=ids.device)
        counts.scatter_add_(1, ids.clamp(0, width - 1), keep.to(torch.int32))
        return counts > 0

    def windows(self, seq: Any, n: int) -> Any:
        return seq.unfold(-1, n, 1)

    def unpack_bitmask(self, bitmask: Array, width: int, like: Any) -> Any:
        torch = self.torch
        if like.device.type == "cpu":
            host = bitmask.cpu().numpy() if is_torch(bitmask) else bitmask
            return torch.from_numpy(_unpack_host(host, width))
        # On an accelerator: move the packed words (V/8 bytes a row) once, unpack there.
        words = self.asarray(bitmask, like).to(torch.int32)
        if words.ndim == 1:
            words = words[None, :]
        shifts = torch.arange(32, dtype=torch.int32, device=words.device)
        bits = ((words[..., None] >> shifts) & 1).bool().reshape(words.shape[0], -1)
        if bits.shape[-1] >= width:
            return bits[:, :width]
        pad = torch.zeros((bits.shape[0], width - bits.shape[-1]), dtype=torch.bool, device=bits.device)
        return torch.cat([bits, pad], dim=-1)

    def alive(self, x: Any) -> Any:
        return (x > float("-inf")).any(dim=-1)

    def stack(self, xs: list[Any]) -> Any:
        return self.torch.stack(xs)

    def argmax(self, x: Any) -> Any:
        return x.argmax(dim=-1)

    def multinomial(self, probs: Any, generator: Any) -> Any:
        torch = self.torch
        if generator is not None and not isinstance(generator, torch.Generator):
            generator = torch.Generator(device=probs.device).manual_seed(int(generator))
        return torch.multinomial(probs.float(), 1, generator=generator).squeeze(-1)

    def to_host(self, x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()


_NUMPY = _NumpyOps()
_TORCH: _TorchOps | None = None


def ops_for(x: Array) -> ArrayOps:
    """The operations for `x`'s array type: torch for a torch tensor, numpy otherwise."""
    global _TORCH
    if is_torch(x):
        if _TORCH is None:
            _TORCH = _TorchOps(sys.modules["torch"])
        return _TORCH
    return _NUMPY


class TokenMask:
    """A fixed set of token ids, handed out as a `[1, width]` boolean mask for any logits width (ids
    past the host vector are False) on the logits' device; each (width, device) is made once."""

    def __init__(self, mask: np.ndarray) -> None:
        self.host = np.asarray(mask, dtype=bool)
        self._made: dict[tuple[int, str], Array] = {}

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> TokenMask:
        ids = np.asarray(list(ids), dtype=np.int64)
        if (ids < 0).any():
            raise ValueError(f"token ids must be non-negative, got {ids[ids < 0].tolist()}")
        mask = np.zeros(int(ids.max(initial=-1)) + 1, dtype=bool)
        mask[ids] = True
        return cls(mask)

    def remove(self, logits: Array) -> Array:
        """`logits` with the tokens of this set at -inf."""
        return ops_for(logits).keep(~self.like(logits), logits)

    def keep_only(self, logits: Array) -> Array:
        """`logits` with every token outside this set at -inf."""
        return ops_for(logits).keep(self.like(logits), logits)

    def like(self, logits: Array) -> Array:
        """The `[1, width]` mask for `logits`' width and device."""
        width = logits.shape[-1]
        device = str(logits.device) if is_torch(logits) else "numpy"
        made = self._made.get((width, device))
        if made is None:
            host = np.zeros((1, width), dtype=bool)
            n = min(width, self.host.size)
            host[0, :n] = self.host[:n]
            made = ops_for(logits).asarray(host, logits)
            self._made[(width, device)] = made
        return made
