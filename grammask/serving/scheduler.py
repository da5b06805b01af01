"""Continuous batching: one decode loop, on its own thread, shared by every request of the server.

A request joins the batch between two steps and leaves when it ends (or its client goes away);
each row carries its own `Matcher`, or none for free text. The KV cache is one transformers cache for
the whole batch, `[rows, heads, columns, dim]` per layer, with a 2-D attention mask that says which
columns of each row hold real tokens. Position ids are each row's own, so a row's logits do not
depend on where its columns sit (up to float noise from different batch shapes):

- **join**: new rows are prefilled in a forward pass of their own (right-padded to the longest
  prompt), then their cache is concatenated to the batch's, the narrower one padded on the left with
  masked columns;
- **step**: every row feeds its pending tokens (the last pick, plus any jump-forward tokens, plus a
  speculative draft) in one pass, right-padded to the longest; the columns a row did not keep (its
  padding, the rejected part of its draft) are masked out;
- **leave**: finished rows are dropped from the batch dimension before the next step;
- **compaction**: when masked columns pile up, each row's kept columns are gathered to the right
  and the rest is cut off, so the cache stays about as long as the longest row.

Sampling, jump-forward, safe end and stop strings behave as in `grammask.generate`
(`grammask.generation.loop`); with `speculative_k > 0`, rows draft by prompt lookup
(`grammask.generation.speculative.NgramDrafter`) and `verify_draft` accepts the longest prefix that
token-by-token decoding would give, so greedy output is the same with and without speculation.
"""

from __future__ import annotations

import codecs
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grammask.bitmask import allocate_bitmask
from grammask.compiler import CompiledGrammar
from grammask.errors import GenerationError
from grammask.generation.jump_forward import CanonicalTokenizer, nothing_but_end_follows
from grammask.generation.model import forward_keywords
from grammask.matcher import Matcher
from grammask.processors import GenerationContext, Temperature, TopP, apply_token_bitmask, masked_softmax
from grammask.processors import greedy as greedy_pick
from grammask.processors import sample as sample_pick
from grammask.vocab import Vocabulary

__all__ = ["Event", "Scheduler", "Sequence_", "SchedulerStats"]

logger = logging.getLogger(__name__)

#: Masked columns tolerated in the batch cache before it is compacted.
COMPACT_AFTER = 48


@dataclass
class Sequence_:
    """One generation request as the decode loop sees it (built by the HTTP layer).

    `on_event` is called on the decode thread with each `Event`; it must not block.
    """

    prompt: list[int]
    compiled: CompiledGrammar | None
    on_event: Callable[[Event], None]
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    cancelled: bool = False
    submitted: float = field(default_factory=time.monotonic)


@dataclass
class Event:
    """What the decode loop reports for a request: new `text`, then one final event with
    `finish_reason` ("eos", "stop", "length") or `error` set."""

    text: str = ""
    finish_reason: str | None = None
    error: str | None = None
    completion_tokens: int = 0
    full_text: str = ""


@dataclass
class SchedulerStats:
    """Counters since the server started (read by /health and the benchmark)."""

    steps: int = 0
    forward_passes: int = 0
    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_draft_tokens: int = 0
    forced_tokens: int = 0
    max_rows: int = 0
    finished: int = 0
    failed: int = 0
    cancelled: int = 0


@dataclass
class _Row:
    """A request's decoding state inside the batch."""

    req: Sequence_
    matcher: Matcher | None
    seq: list[int]  # prompt, then generated ids
    n_prompt: int
    cached: int = 0  # leading tokens of `seq` whose keys and values are in the cache
    draft: list[int] = field(default_factory=list)
    feed: list[int] = field(default_factory=list)  # what this step feeds: seq[cached:] + draft
    text: str = ""
    emitted: int = 0
    finish: str | None = None
    short: int = 0
    rng: Any = None
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    @property
    def generated(self) -> list[int]:
        return self.seq[self.n_prompt :]


class Scheduler:
    """The decode loop: `submit` requests from any thread, `cancel` them, `start`/`stop` the thread."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        vocab: Vocabulary,
        *,
        max_batch: int = 16,
        jump_forward: bool = True,
        speculative_k: int = 0,
        speculative_max_rows: int = 4,
        safe_end: bool = True,
    ) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.vocab = vocab
        self.canonical = CanonicalTokenizer(tokenizer, vocab)
        self.max_batch = max_batch
        self.jump_forward = jump_forward
        self.safe_end = safe_end
        self.speculative_k = speculative_k
        self.speculative_max_rows = speculative_max_rows
        self.drafter: Any = None
        self.verify: Any = None
        if speculative_k > 0:
            from grammask.generation.speculative import NgramDrafter, verify_draft

            self.drafter = NgramDrafter(n_max=3, n_min=1, k=speculative_k)
            self.verify = verify_draft
        self.eos = frozenset(vocab.eos_ids)
        self.pad = vocab.eos_ids[0] if vocab.eos_ids else 0
        self.device = getattr(model, "device", "cpu")
        self.keywords = forward_keywords(model)
        self.bitmask = allocate_bitmask(1, vocab.size)
        self.stats = SchedulerStats()
        self._incoming: deque[Sequence_] = deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._rows: list[_Row] = []
        self._joining = 0  # requests taken from `_incoming` and not yet in `_rows` (their prefill runs)
        self._cache: Any = None
        self._mask: Any = None  # [rows, columns] long
        self._thread = threading.Thread(target=self._run, name="grammask-decode", daemon=True)

    # -- the public side (any thread) ---------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout=30)

    def submit(self, req: Sequence_) -> None:
        """Queue `req`; it joins the batch before the next step."""
        with self._wake:
            self._incoming.append(req)
            self._wake.notify()

    def cancel(self, req: Sequence_) -> None:
        """Drop `req` (its client went away): its row leaves the batch before the next step."""
        req.cancelled = True
        with self._wake:
            self._wake.notify()

    @property
    def active(self) -> int:
        """Rows in the batch plus requests waiting to join or joining."""
        with self._wake:
            return len(self._rows) + len(self._incoming) + self._joining

    # -- the loop ------------------------------------------------------------------------------------

    def _run(self) -> None:
        with self.torch.inference_mode():
            while True:
                with self._wake:
                    while not self._stopping and not self._rows and not self._incoming:
                        self._wake.wait()
                    if self._stopping:
                        break
                    room = self.max_batch - len(self._rows)
                    joining: list[Sequence_] = []
                    while self._incoming and len(joining) < room:
                        req = self._incoming.popleft()
                        if req.cancelled:
                            self.stats.cancelled += 1
                        else:
                            joining.append(req)
                    self._joining = len(joining)
                try:
                    self._leave()
                    if joining:
                        self._join(joining)
                        self._joining = 0
                    if self._rows:
                        self._step()
                except Exception as exc:  # a failed pass fails its rows, never the loop
                    self._joining = 0
                    logger.exception("decode step failed")
                    for row in self._rows:
                        self._fail(row, f"generation failed: {exc}")
                    self._rows, self._cache, self._mask = [], None, None

    def _leave(self) -> None:
        """Drop finished and cancelled rows from the batch."""
        keep = []
        for b, row in enumerate(self._rows):
            if row.req.cancelled and row.finish is None:
                row.finish = "cancelled"
                self.stats.cancelled += 1
            if row.finish is None:
                keep.append(b)
        if len(keep) == len(self._rows):
            return
        self._rows = [self._rows[b] for b in keep]
        if not keep:
            self._cache, self._mask = None, None
            return
        index = self.torch.tensor(keep, device=self.device)
        for layer in self._cache.layers:
            layer.keys = layer.keys.index_select(0, index)
            layer.values = layer.values.index_select(0, index)
        self._mask = self._mask.index_select(0, index)

    def _join(self, reqs: list[Sequence_]) -> None:
        rows = []
        for req in reqs:
            row = _Row(req, None if req.compiled is None else req.compiled.matcher(), list(req.prompt), len(req.prompt))
            if req.temperature > 0:
                row.rng = np.random.default_rng(req.seed)
            try:
                if row.matcher is not None:
                    self._after_picks(row)  # text forced at the very start goes in with the prompt
            except Exception as exc:
                self._fail(row, str(exc))
                continue
            if row.finish is not None:
                self._finish(row)
            else:
                rows.append(row)
        if not rows:
            return
        try:
            cache, mask = self._forward(rows, None, None)
        except Exception as exc:  # a failed prefill fails the joining rows, not the batch
            logger.exception("prefill failed")
            for row in rows:
                self._fail(row, f"generation failed: {exc}")
            return
        if self._cache is None:
            self._rows, self._cache, self._mask = rows, cache, mask
        else:
            self._merge(rows, cache, mask)
        self.stats.max_rows = max(self.stats.max_rows, len(self._rows))

    def _merge(self, rows: list[_Row], cache: Any, mask: Any) -> None:
        """Append the prefilled `rows` (their own cache and mask) to the batch."""
        torch = self.torch
        width = max(self._mask.shape[1], mask.shape[1])

        def pad(x: Any, dim: int) -> Any:
            missing = width - x.shape[dim]
            if not missing:
                return x
            shape = list(x.shape)
            shape[dim] = missing
            return torch.cat([x.new_zeros(shape), x], dim=dim)

        for old, new in zip(self._cache.layers, cache.layers, strict=True):
            old.keys = torch.cat([pad(old.keys, 2), pad(new.keys, 2)], dim=0)
            old.values = torch.cat([pad(old.values, 2), pad(new.values, 2)], dim=0)
        self._mask = torch.cat([pad(self._mask, 1), pad(mask, 1)], dim=0)
        self._rows += rows

    def _step(self) -> None:
        self.stats.steps += 1
        self._cache, self._mask = self._forward(self._rows, self._cache, self._mask)
        self._compact()

    # -- the model -----------------------------------------------------------------------------------

    def _draft(self, row: _Row, rows: int) -> list[int]:
        """Up to k drafted tokens for `row`; none in a batch of more than `speculative_max_rows` rows,
        where every row would be padded to the draft's length (on a CPU, 16 rows feeding 5 tokens
        cost about 1.6 times 16 rows feeding one, which the accepted drafts do not pay back)."""
        if self.drafter is None or rows > self.speculative_max_rows:
            return []
        left = row.req.max_tokens - len(row.generated) - 1
        if left <= 0:
            return []
        draft = list(self.drafter.propose(row.seq))[:left]
        if draft and row.matcher is not None:
            draft = draft[: row.matcher.validate_tokens(draft)]
        return draft

    def _forward(self, rows: list[_Row], cache: Any, mask: Any) -> tuple[Any, Any]:
        """Feed every row's pending tokens (and draft) in one pass, then pick and advance each row.

        Returns the cache and the attention mask with the columns each row keeps."""
        torch = self.torch
        for row in rows:
            row.draft = self._draft(row, len(rows))
            row.feed = row.seq[row.cached :] + row.draft
        counts = [len(row.feed) for row in rows]
        n = max(counts)
        ids = torch.full((len(rows), n), self.pad, dtype=torch.long)
        fresh = torch.zeros((len(rows), n), dtype=torch.long)
        positions = torch.zeros((len(rows), n), dtype=torch.long)
        for b, (row, k) in enumerate(zip(rows, counts, strict=True)):
            ids[b, :k] = torch.tensor(row.feed)
            fresh[b, :k] = 1
            positions[b] = row.cached + torch.arange(n).clamp(max=k - 1)
        columns = 0 if mask is None else mask.shape[1]
        attention = fresh if mask is None else torch.cat([mask, fresh], dim=1)
        # Logits from the first position any row needs: its last pending token (the draft's positions follow).
        firsts = [k - 1 - len(row.draft) for row, k in zip(rows, counts, strict=True)]
        keep = n - min(firsts) if self.keywords.logits_to_keep else n
        extra = {"logits_to_keep": keep} if self.keywords.logits_to_keep else {}
        from transformers import DynamicCache

        out = self.model(
            input_ids=ids.to(self.device),
            attention_mask=attention.to(self.device),
            position_ids=positions.to(self.device),
            use_cache=True,
            **{self.keywords.cache: cache if cache is not None else DynamicCache()},
            **extra,
        )
        self.stats.forward_passes += 1
        logits = out.logits[:, -keep:].float().cpu()
        attention = attention.to(self.device)
        for b, row in enumerate(rows):
            start = firsts[b] - (n - keep)
            before = row.cached
            try:
                self._advance(row, logits[b, start : start + len(row.draft) + 1])
            except Exception as exc:
                self._fail(row, str(exc))
                continue
            kept = self._kept(row, before)
            attention[b, columns + kept : columns + n] = 0
            if row.finish is not None:
                self._finish(row)
            else:
                self._emit(row)
        return getattr(out, self.keywords.cache), attention

    def _kept(self, row: _Row, before: int) -> int:
        """How many fed tokens stay in the cache (those that are in the row's sequence, leaving at least
        one token of it to feed next); updates `row.cached`."""
        match = 0
        for fed, actual in zip(row.feed, row.seq[before:], strict=False):
            if fed != actual:
                break
            match += 1
        row.cached = min(before + match, len(row.seq) - 1)
        return row.cached - before

    def _compact(self) -> None:
        """Gather each row's kept columns to the right when masked columns pile up."""
        torch = self.torch
        mask = self._mask
        counts = mask.sum(dim=1)
        width = int(counts.max())
        if mask.shape[1] - width < COMPACT_AFTER:
            return
        index = torch.zeros((mask.shape[0], width), dtype=torch.long, device=mask.device)
        new_mask = torch.zeros((mask.shape[0], width), dtype=mask.dtype, device=mask.device)
        for b in range(mask.shape[0]):
            kept = torch.nonzero(mask[b]).flatten()
            index[b, width - len(kept) :] = kept
            new_mask[b, width - len(kept) :] = 1
        for layer in self._cache.layers:
            heads, dim = layer.keys.shape[1], layer.keys.shape[3]
            gather = index[:, None, :, None].expand(-1, heads, -1, dim)
            layer.keys = layer.keys.gather(2, gather)
            layer.values = layer.values.gather(2, gather)
        self._mask = new_mask

    # -- picking and advancing a row -----------------------------------------------------------------

    def _pick(self, row: _Row, logits: Any, matcher: Matcher | None) -> int:
        """One token from `logits` ([V]) under `matcher`'s mask, greedy or sampled."""
        scores = logits.numpy()[None, :]
        if matcher is not None:
            matcher.fill_bitmask(self.bitmask)
            scores = apply_token_bitmask(scores, self.bitmask)
        if row.req.temperature <= 0:
            return int(greedy_pick(scores)[0])
        ctx = GenerationContext(np.asarray([row.seq]), row.n_prompt, len(row.seq))
        scores = Temperature(row.req.temperature).apply(scores, ctx)
        if row.req.top_p < 1:
            scores = TopP(row.req.top_p).apply(scores, ctx)
        return int(sample_pick(masked_softmax(scores), row.rng)[0])

    def _advance(self, row: _Row, logits: Any) -> None:
        """Take the picks of one pass: a token, or with a draft the prefix verification accepts."""
        matcher = row.matcher
        safe_end: list[int] = []  # the tokens needed when a pick broke the safe end

        def accept(token: int) -> bool:
            if matcher is None:
                if token in self.eos:
                    row.finish = "eos"
                    return False
            elif matcher.is_finished():
                row.finish = "eos"
                return False
            if matcher is not None and self.safe_end:
                left = row.req.max_tokens - len(row.generated) - 1
                needed = self.canonical.needed(matcher, left)
                if needed is not None:
                    matcher.rollback(1)
                    safe_end.append(needed - left)
                    return False
            self._append(row, [token])
            if row.finish is not None:
                return False
            return matcher is None or not (matcher.forced_bytes() or nothing_but_end_follows(matcher))

        if self.verify is not None:
            before = len(row.seq)
            self.verify(matcher, row.draft, logits, lambda scores, m: self._pick(row, scores, m), on_accept=accept)
            self.stats.drafted_tokens += len(row.draft)
            self.stats.accepted_draft_tokens += max(0, min(len(row.seq) - before - 1, len(row.draft)))
        else:
            token = self._pick(row, logits[0], matcher)
            if matcher is not None and not matcher.advance(token):
                raise GenerationError(f"token {token} was picked but the grammar does not allow it")
            accept(token)
        if row.finish is not None:
            if row.finish == "eos":
                self._flush(row)
            return
        if safe_end:
            assert matcher is not None
            row.short = safe_end[0]
            self._append(row, self.canonical.completion(matcher) or [])
            row.finish = row.finish or "length"
            self._flush(row)
            return
        self._after_picks(row)

    def _after_picks(self, row: _Row) -> None:
        """Jump-forward: append the text the grammar now forces; end a row that can only end."""
        matcher = row.matcher
        if matcher is None:
            return
        left = row.req.max_tokens - len(row.generated)
        if self.jump_forward and left > 0:
            forced = self.canonical.advance_forced(matcher, row.generated, left)
            if forced:
                self.stats.forced_tokens += len(forced)
                self._append(row, forced)
        if row.finish is None and nothing_but_end_follows(matcher):
            row.finish = "eos"
            self._flush(row)

    def _append(self, row: _Row, tokens: Sequence[int]) -> None:
        """Add generated tokens to `row`'s sequence and text; end it at a stop string or the budget."""
        row.seq += tokens
        self.stats.generated_tokens += len(tokens)
        before = len(row.text)
        token_bytes, special = self.vocab.token_bytes, self.vocab.is_special
        row.text += row.decoder.decode(b"".join(token_bytes[t] for t in tokens if not special[t]))
        stops = row.req.stop
        if stops:
            hold = max(len(s) for s in stops) - 1
            start = max(0, before - hold)
            hits = [i for i in (row.text.find(s, start) for s in stops) if i >= 0]
            if hits:
                row.text = row.text[: min(hits)]
                row.finish = "stop"
                return
        if len(row.generated) >= row.req.max_tokens:
            row.finish = "length"
            self._flush(row)

    @staticmethod
    def _flush(row: _Row) -> None:
        row.text += row.decoder.decode(b"", final=True)

    # -- reporting -----------------------------------------------------------------------------------

    def _emit(self, row: _Row) -> None:
        """Send the part of the text that no stop string can still claim."""
        hold = max((len(s) for s in row.req.stop), default=1) - 1
        end = len(row.text) if row.finish is not None else max(row.emitted, len(row.text) - hold)
        if end > row.emitted:
            piece = row.text[row.emitted : end]
            row.emitted = end
            row.req.on_event(Event(text=piece))

    def _finish(self, row: _Row) -> None:
        self._emit(row)
        self.stats.finished += 1
        row.req.on_event(Event(finish_reason=row.finish, completion_tokens=len(row.generated), full_text=row.text))

    def _fail(self, row: _Row, message: str) -> None:
        row.finish = "error"
        self.stats.failed += 1
        row.req.on_event(Event(error=message, completion_tokens=len(row.generated), full_text=row.text))
