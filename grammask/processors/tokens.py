"""Hard masks over fixed token sets: suppressed tokens, forbidden characters, forced tokens."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from grammask.processors.backend import TokenMask
from grammask.processors.base import GenerationContext, StatelessProcessor

__all__ = ["ForbidCharacters", "ForceBOS", "ForceEOS", "ForceTokens", "SuppressTokens"]


def _ids(ids: Iterable[int] | int) -> tuple[int, ...]:
    return (int(ids),) if isinstance(ids, (int, np.integer)) else tuple(int(i) for i in ids)


class SuppressTokens(StatelessProcessor):
    """Never allow the given token ids (ids past the logits' width are ignored)."""

    def __init__(self, token_ids: Iterable[int] | int) -> None:
        self.token_ids = _ids(token_ids)
        self._mask = TokenMask.from_ids(self.token_ids)

    def __repr__(self) -> str:
        return f"SuppressTokens({list(self.token_ids)})"

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        return self._mask.remove(logits)


class ForbidCharacters(StatelessProcessor):
    """Never allow a token whose text contains any of the characters `chars` ("a poem without e").

    The token set is computed once from `vocab.token_bytes`: a token is forbidden when the UTF-8
    encoding of a forbidden character occurs in its bytes, which also covers tokens that are not
    whole UTF-8 text. Special tokens are never forbidden. For ASCII characters this is exact. A
    multi-byte character can still be spelled by byte tokens that each hold only part of its
    encoding; to exclude such a character exactly, constrain with a grammar (`[^é]*`) instead.
    """

    def __init__(self, chars: str, vocab: Any) -> None:
        if not chars:
            raise ValueError("ForbidCharacters needs at least one character")
        self.chars = "".join(sorted(set(chars)))
        needles = [c.encode("utf-8") for c in self.chars]
        special = np.asarray(vocab.is_special, dtype=bool)
        forbidden = np.fromiter(
            (any(n in text for n in needles) for text in vocab.token_bytes), dtype=bool, count=len(vocab.token_bytes)
        )
        forbidden &= ~special[: forbidden.size]
        self._mask = TokenMask(forbidden)

    def __repr__(self) -> str:
        return f"ForbidCharacters({self.chars!r})"

    @property
    def forbidden_token_ids(self) -> np.ndarray:
        """The ids of every forbidden token, sorted."""
        return np.flatnonzero(self._mask.host)

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        return self._mask.remove(logits)


class ForceTokens(StatelessProcessor):
    """At given positions allow only the given tokens: `{position: token id or ids}`, where position
    0 is the first generated token. Other logits at that step become -inf; the forced tokens keep
    theirs, so a token an earlier processor masked stays masked (and the pipeline reports it)."""

    def __init__(self, forced: Mapping[int, Iterable[int] | int]) -> None:
        if any(position < 0 for position in forced):
            raise ValueError(f"forced positions must be non-negative, got {sorted(forced)}")
        self.forced = {int(position): _ids(ids) for position, ids in forced.items()}
        self._masks = {position: TokenMask.from_ids(ids) for position, ids in self.forced.items()}

    def __repr__(self) -> str:
        return f"ForceTokens({self.forced})"

    def apply(self, logits: Any, ctx: GenerationContext) -> Any:
        mask = self._masks.get(ctx.generated)
        return logits if mask is None else mask.keep_only(logits)


class ForceBOS(ForceTokens):
    """Make the first generated token the beginning-of-sequence token."""

    def __init__(self, bos_token_id: int) -> None:
        super().__init__({0: bos_token_id})
        self.bos_token_id = bos_token_id

    def __repr__(self) -> str:
        return f"ForceBOS({self.bos_token_id})"


class ForceEOS(ForceTokens):
    """Make the last of `max_new_tokens` generated tokens an end-of-sequence token (any of the ids)."""

    def __init__(self, max_new_tokens: int, eos_token_ids: Iterable[int] | int) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        super().__init__({max_new_tokens - 1: eos_token_ids})
        self.max_new_tokens = max_new_tokens
        self.eos_token_ids = _ids(eos_token_ids)

    def __repr__(self) -> str:
        return f"ForceEOS({self.max_new_tokens}, {list(self.eos_token_ids)})"
