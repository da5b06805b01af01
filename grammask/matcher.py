"""Matchers: the per-sequence state of constrained decoding.

A `Matcher` follows one sequence through a `CompiledGrammar`: it says which tokens may come next
(`fill_bitmask`, `allowed_token_ids`), takes the token the model chose (`advance`), can step back
(`rollback`, for speculative decoding) and tells what the grammar forces next (`forced_bytes`,
`forced_tokens`, for jump-forward). Its state is a short history of immutable parser configs, so
`copy` is cheap and matchers sharing one compiled grammar never interfere, even across threads.
A `BatchMatcher` fills one bitmask for a batch whose rows have different grammars, or none.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from grammask.bitmask import unpack_bitmask
from grammask.engine.completion import shortest_completion
from grammask.engine.parser import Config

if TYPE_CHECKING:  # the compiler makes matchers: a run-time import would be a cycle
    from grammask.compiler import CompiledGrammar

__all__ = ["BatchMatcher", "Matcher"]

#: History entry meaning "an end-of-sequence token was accepted".
_FINISHED = None


class Matcher:
    """Which tokens may come next, for one sequence."""

    def __init__(self, compiled: CompiledGrammar, stop_token_ids: Iterable[int] | None = None) -> None:
        self.compiled = compiled
        self._parser = compiled.parser
        self._masks = compiled.masks
        self._vocab = compiled.vocab
        self._eos = frozenset(compiled.vocab.eos_ids)
        #: With an end set of its own: (bits to clear, bits to set) in a mask where the text is complete.
        self._end_bits: tuple[np.ndarray, np.ndarray] | None = None
        if stop_token_ids is not None:
            self._eos = frozenset(int(t) for t in stop_token_ids)
            self._end_bits = _end_bits(compiled, self._eos)
        self._max_history = compiled.limits.max_rollback_tokens + 1
        self._history: list[Config | None] = [self._parser.initial]
        compiled.matchers.add(self)

    # -- state ------------------------------------------------------------------------------------

    @property
    def _config(self) -> Config | None:
        return self._history[-1]

    def _push(self, config: Config | None) -> None:
        self._history.append(config)
        if len(self._history) > self._max_history:
            del self._history[0]

    def is_finished(self) -> bool:
        """Whether an end-of-sequence token has been accepted."""
        return self._config is _FINISHED

    def is_terminated(self) -> bool:
        """Whether an end token has been accepted (`is_finished`, under the name engines use)."""
        return self._config is _FINISHED

    def can_finish(self) -> bool:
        """Whether the text so far is complete, so an end-of-sequence token is allowed."""
        config = self._config
        return config is not _FINISHED and config.accepting

    def reset(self) -> None:
        self._history = [self._parser.initial]

    def copy(self) -> Matcher:
        twin = Matcher.__new__(Matcher)
        twin.__dict__.update(self.__dict__)
        twin._history = list(self._history)
        self.compiled.matchers.add(twin)
        return twin

    # -- masks ------------------------------------------------------------------------------------

    def _mask(self) -> np.ndarray:
        config = self._config
        if self._end_bits is None:
            return self._masks.eos_mask if config is _FINISHED else self._masks.mask(config)
        clear, add = self._end_bits
        if config is _FINISHED:
            return add
        mask = self._masks.mask(config)
        return (mask & ~clear) | add if config.accepting else mask

    def fill_bitmask(self, bitmask, row: int = 0) -> None:
        """Write the allowed tokens into row `row` of a packed int32 bitmask (numpy or torch).

        After an end-of-sequence token only end-of-sequence tokens stay allowed (padding). A row
        wider than the vocabulary (a model's padded logits) gets its padding words cleared. A
        torch bitmask on the CPU is written through a numpy view of it: a torch copy per row
        cost six times as much.
        """
        mask = self._mask()
        _check_width(bitmask, len(mask))
        host = _on_host(bitmask)
        if host is None:
            _send_rows(bitmask, row, [mask])
        else:
            host[row, : len(mask)] = mask
            if host.shape[1] > len(mask):  # (clearing an empty slice costs a third of a fill)
                host[row, len(mask) :] = 0

    def allowed_token_ids(self) -> np.ndarray:
        return np.flatnonzero(unpack_bitmask(self._mask(), self._vocab.size)).astype(np.int32)

    def is_allowed(self, token_id: int) -> bool:
        mask = self._mask()
        return 0 <= token_id < self._vocab.size and bool((int(mask[token_id >> 5]) >> (token_id & 31)) & 1)

    # -- moving -----------------------------------------------------------------------------------

    def _after(self, config: Config | None, token_id: int) -> tuple[bool, Config | None]:
        """Whether `token_id` is allowed at `config`, and the state after it (`_FINISHED` after an end token)."""
        if config is _FINISHED or not 0 <= token_id < self._vocab.size:
            return False, None
        vocab = self._vocab
        text = vocab.token_bytes[token_id] if token_id < len(vocab.token_bytes) else b""
        after = self._parser.step_token(config, token_id, text, bool(vocab.is_special[token_id]))
        if after is None:
            return token_id in self._eos and config.accepting, _FINISHED
        return True, after

    def advance(self, token_id: int) -> bool:
        """Take one token. Returns False, changing nothing, if the token is not allowed."""
        allowed, after = self._after(self._config, token_id)
        if allowed:
            self._push(after)
        return allowed

    def validate_tokens(self, token_ids: Iterable[int]) -> int:
        """How many of `token_ids`, from the first, could be taken in a row; the state is unchanged.

        Engines use it to trim a speculative draft to its longest valid prefix.
        """
        config = self._config
        count = 0
        for token_id in token_ids:
            allowed, config = self._after(config, int(token_id))
            if not allowed:
                break
            count += 1
        return count

    def accept_string(self, text: str) -> bool:
        """Take text (UTF-8). Returns False, changing nothing, if it cannot follow."""
        return self.advance_bytes(text.encode("utf-8"))

    def advance_bytes(self, data: bytes) -> bool:
        """Take raw text (for forced text). Returns False, changing nothing, if it cannot follow."""
        config = self._config
        if config is _FINISHED:
            return False
        after = self._parser.step_bytes(config, data)
        if after is None:
            return False
        self._push(after)
        return True

    def rollback(self, n: int = 1) -> None:
        """Undo the last `n` advances."""
        if not 0 <= n < len(self._history):
            raise ValueError(f"cannot roll back {n} steps: {len(self._history) - 1} are kept")
        if n:
            del self._history[-n:]

    # -- jump-forward -----------------------------------------------------------------------------

    def forced_bytes(self) -> bytes:
        """The text that every valid continuation starts with (empty when there is a choice)."""
        config = self._config
        return b"" if config is _FINISHED else self._parser.forced_bytes(config)

    def forced_text(self) -> str:
        """`forced_bytes`, cut at the last complete UTF-8 character."""
        data = self.forced_bytes()
        for cut in range(len(data), max(len(data) - 4, -1), -1):
            try:
                return data[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
        return ""

    def shortest_completion(self) -> bytes | None:
        """The fewest bytes that make the text complete (b"" if it is or has finished), or None if
        none is found within the search bound or the completion needs a special token."""
        config = self._config
        return b"" if config is _FINISHED else shortest_completion(self._parser, config)

    def forced_tokens(self) -> list[int]:
        """Tokens that spell the forced text, longest match first, without its last token.

        The last token is left out because the model may rightly merge it with what follows
        (the forced text `{"` followed by free text); use a tokenizer for canonical splits.
        """
        data = self.forced_bytes()
        tokens: list[int] = []
        start = 0
        while start < len(data):
            token, length = self._masks.longest_token_at(data, start)
            if token < 0:
                break
            tokens.append(token)
            start += length
        return tokens[:-1] if start < len(data) or not self._forced_end_is_final() else tokens

    def _forced_end_is_final(self) -> bool:
        """Whether nothing but the end of sequence can follow the forced text."""
        config = self._config
        if config is _FINISHED:
            return True
        after = self._parser.step_bytes(config, self.forced_bytes())
        return after is not None and not after.sets


def _end_bits(compiled: CompiledGrammar, ends: frozenset[int]) -> tuple[np.ndarray, np.ndarray]:
    """Packed masks of the vocabulary's end tokens that `ends` drops (unless the grammar names them
    as tokens) and of the tokens in `ends`, for a matcher with an end set of its own."""
    masks, size = compiled.masks, compiled.vocab.size
    bad = [t for t in ends if not 0 <= t < size]
    if bad:
        raise ValueError(f"stop token id {bad[0]} is outside the vocabulary (size {size})")
    named = {t for ids in compiled.parser.token_ids for t in ids}
    clear = np.zeros(size, dtype=bool)
    clear[[t for t in compiled.vocab.eos_ids if t not in ends and t not in named]] = True
    add = np.zeros(size, dtype=bool)
    add[sorted(ends)] = True
    return masks.pack(clear), masks.pack(add)


class BatchMatcher:
    """One bitmask for a batch; row `i` follows `matchers[i]`, or allows everything if it is None."""

    def __init__(self, matchers: list[Matcher | None]) -> None:
        self.matchers = list(matchers)

    def fill_bitmask(self, bitmask) -> None:
        """Write row `i`'s allowed tokens into row `i` of a packed int32 bitmask (numpy or torch).

        The masks are looked up first, then written together: in one copy where they fill whole
        rows, as in a serving engine's bitmask (a copy per row cost as much again as the
        lookups), and in one transfer to a torch bitmask on another device, not one per row."""
        masks = [None if m is None else m._mask() for m in self.matchers]
        if not masks:
            return
        _check_width(bitmask, max((len(mask) for mask in masks if mask is not None), default=0))
        host = _on_host(bitmask)
        if host is None:
            _send_rows(bitmask, 0, masks)
        else:
            _write_rows(masks, host[: len(masks)])

    def advance(self, token_ids) -> list[bool]:
        """Advance every row with a matcher by its token; rows without one report True."""
        return [m is None or m.advance(int(t)) for m, t in zip(self.matchers, token_ids, strict=False)]


def _check_width(bitmask, words: int) -> None:
    """Raise if a row of `bitmask` is narrower than a mask of `words` words."""
    if bitmask.shape[1] < words:
        raise ValueError(f"the bitmask has {bitmask.shape[1]} words a row; this vocabulary needs {words}")


def _on_host(bitmask) -> np.ndarray | None:
    """`bitmask` as a numpy array that shares its memory (a torch tensor on the CPU: written in
    place, without a copy per row), or None for a tensor on another device."""
    if isinstance(bitmask, np.ndarray):
        return bitmask
    return bitmask.numpy() if bitmask.device.type == "cpu" else None


def _send_rows(bitmask, first: int, masks: list[np.ndarray | None]) -> None:
    """`_write_rows` into the rows of a torch bitmask on another device from row `first` on: the
    rows are staged on the host and sent in one transfer."""
    staged = np.empty((len(masks), bitmask.shape[1]), dtype=np.int32)
    _write_rows(masks, staged)
    bitmask[first : first + len(masks)].copy_(sys.modules["torch"].from_numpy(staged), non_blocking=True)


def _write_rows(masks: list[np.ndarray | None], out: np.ndarray) -> None:
    """Row i of `out`: `masks[i]`, then zeros (the padding words of a model's logits, or of a
    smaller vocabulary's row); all ones where `masks[i]` is None (a row without a grammar). One
    copy where every mask fills its whole row, as in a serving engine's bitmask."""
    width = out.shape[1]
    whole = [mask for mask in masks if mask is not None and len(mask) == width]
    if out.flags.c_contiguous and len(whole) == len(masks):
        np.concatenate(whole, out=out.reshape(-1))
        return
    for row, mask in enumerate(masks):
        if mask is None:
            out[row] = -1
        else:
            out[row, : len(mask)] = mask
            out[row, len(mask) :] = 0
