"""Jump-forward: the tokens to append, unsampled, when the grammar forces a run of text.

Forced text is tokenized the way the tokenizer itself would tokenize it in context (canonical
tokens), so the model is never fed a split it was not trained on. The rule, for forced bytes `F`
after the generated tokens so far:

1. Context `C` is the text of the last few generated tokens (never the prompt: the prompt/output
   boundary is a hard token boundary, see docs/generation.md). `C + F` is tokenized as a whole.
2. The tokens covering `C` must end exactly at the end of `C`; a canonical token spanning that
   boundary would need an already emitted token undone, so nothing is appended this step (the model
   then samples a token under the mask, which can only spell a prefix of `F`).
3. Of the tokens covering `F`, only the *stable* ones are kept: those that end where the
   pre-tokenizer's last chunk of `C + F` starts (BPE never merges across pre-token chunks, and only
   the last chunk can grow into what follows). Without a pre-tokenizer, the last token is dropped.
   When nothing but the end of sequence can follow `F`, every token is stable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grammask.matcher import Matcher
from grammask.vocab import Vocabulary

__all__ = ["CanonicalTokenizer", "nothing_but_end_follows"]

#: Generated tokens taken as context when tokenizing forced text.
CONTEXT_TOKENS = 4


class CanonicalTokenizer:
    """Canonical token ids for forced text, from a transformers tokenizer and its `Vocabulary`."""

    def __init__(self, tokenizer: Any, vocab: Vocabulary) -> None:
        self.tokenizer = tokenizer
        self.vocab = vocab
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._pre = None if backend is None else backend.pre_tokenizer

    def encode(self, text: str) -> list[int]:
        """`text` as the tokenizer splits it, without special tokens."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def forced_tokens(self, generated: Sequence[int], forced: bytes, *, final: bool) -> list[int]:
        """Stable canonical tokens for `forced` after the tokens `generated` (rule in the module doc).

        `final` says nothing but the end of sequence can follow `forced`, so its last token is kept.
        """
        token_bytes = self.vocab.token_bytes
        is_special = self.vocab.is_special
        context = b""
        for token in reversed(generated[-CONTEXT_TOKENS:]):
            if is_special[token]:
                break
            context = token_bytes[token] + context
        text = _decode_prefix(context, forced)
        if text is None:
            return []
        if len(text.encode("utf-8")) < len(context) + len(forced):
            final = False  # the forced text was cut at an incomplete character
        ids = self.encode(text)
        ends = []
        end = 0
        for token in ids:
            end += len(token_bytes[token]) if token < len(token_bytes) else 0
            ends.append(end)
        if end != len(text.encode("utf-8")):
            return []  # the tokenizer normalises text: its splits do not spell it byte for byte
        # The tokens after the one that ends the context; none if a token spans the boundary.
        first = ends.index(len(context)) + 1 if context and len(context) in ends else 0
        if context and not first:
            return []
        kept, kept_ends = ids[first:], ends[first:]
        if final:
            return kept
        stable_end = self._last_chunk_start(text)
        if stable_end is None:
            return kept[:-1]
        return [t for t, e in zip(kept, kept_ends, strict=True) if e <= stable_end]

    def advance_forced(self, matcher: Matcher, generated: Sequence[int], left: int) -> list[int]:
        """Advance `matcher` over the stable canonical tokens of the text it forces (at most `left`)
        and return them: the jump-forward step of `generate` and of the server's decode loop."""
        forced = matcher.forced_bytes()
        if not forced:
            return []
        end = matcher.copy()
        final = end.advance_bytes(forced) and nothing_but_end_follows(end)
        taken = []
        for token in self.forced_tokens(generated, forced, final=final)[:left]:
            if not matcher.advance(token):
                break
            taken.append(token)
        return taken

    def completion(self, matcher: Matcher) -> list[int] | None:
        """The tokens of the shortest completion from `matcher` (None if none was found)."""
        text = matcher.shortest_completion()
        if text is None:
            return None
        tokens = self.encode(text.decode("utf-8")) if text else []
        check = matcher.copy()
        if not all(check.advance(t) for t in tokens) or not check.can_finish():
            return None
        return tokens

    def needed(self, matcher: Matcher, left: int) -> int | None:
        """The tokens the shortest completion from `matcher` takes when that is more than `left`;
        None when it fits, or when no completion is known (the safe end cannot help then)."""
        text = matcher.shortest_completion()
        if text is None or len(text) <= left:  # a text token holds at least one byte
            return None
        tokens = self.completion(matcher)
        return None if tokens is None or len(tokens) <= left else len(tokens)

    def _last_chunk_start(self, text: str) -> int | None:
        """Byte offset where the pre-tokenizer's last chunk of `text` starts (None: no pre-tokenizer)."""
        if self._pre is None:
            return None
        chunks = self._pre.pre_tokenize_str(text)
        if not chunks:
            return 0
        return len(text[: chunks[-1][1][0]].encode("utf-8"))


def _decode_prefix(context: bytes, forced: bytes) -> str | None:
    """`context + forced` as text, with `forced` cut at its last complete character; None if the
    context itself is not whole UTF-8 text even then."""
    for cut in range(len(forced), max(len(forced) - 4, -1), -1):
        try:
            return (context + forced[:cut]).decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def nothing_but_end_follows(matcher: Matcher) -> bool:
    """Whether `matcher` accepts only end-of-sequence tokens from here on."""
    if not matcher.can_finish():
        return False
    allowed = matcher.allowed_token_ids()
    return bool(allowed.size) and set(allowed.tolist()) <= set(matcher.compiled.vocab.eos_ids)
