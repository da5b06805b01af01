"""`generate`: constrained decoding with a transformers causal LM, a KV cache and per-row formats.

Each step feeds every row's pending tokens in one forward pass (rows of a batch may feed different
numbers: shorter rows are padded, the padding masked out of attention for good), then runs each
row's processor pipeline (its grammar constraint first) on the logits after its last real token and
picks one token. After the pick:

- jump-forward: text the grammar now forces is tokenized canonically (`jump_forward`) and appended
  too, so the next forward pass covers the sampled token and the whole forced run;
- a row whose text can only end is finished without another pass;
- safe end: if the tokens left would no longer be enough to close the format, the pick is undone
  and the shortest completion (`Matcher.shortest_completion`) is appended instead, so the output still parses.

`passes_saved` counts the forward passes that token-by-token decoding of the same output needs
(one per token, plus one for a final end-of-sequence token) minus those actually made.

Speculation (`speculative=k` or a drafter): each live row's pending tokens are fed with a draft
(`grammask.generation.speculative`), and `verify_draft` picks at each drafted position exactly as
above, stopping at the first pick that differs from the draft or where the loop would not take the
model's next pick (forced text appended, the row ended). Every row of a batch speculates on its own
and keeps its own accepted count: the KV columns of its rejected positions are masked out of
attention like padding, and the columns no row kept are cropped off the cache. A row's next draft
has at most one token more than its last draft got accepted (a forward pass costs about as much per
position as per pass on a small CPU, so drafts that keep failing must stay short).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, overload

import numpy as np

from grammask.compiler import CompiledGrammar
from grammask.errors import GenerationError
from grammask.generation.formats import Format, compile_formats, logits_width, tokenizer_vocabulary
from grammask.generation.jump_forward import CanonicalTokenizer, nothing_but_end_follows
from grammask.generation.model import forward_keywords
from grammask.generation.speculative import Drafter, NgramDrafter, crop_cache, verify_draft
from grammask.matcher import Matcher
from grammask.processors import GenerationContext, GrammarConstraint, LogitsProcessor, Pipeline, Temperature, TopP
from grammask.vocab import Vocabulary

__all__ = ["GenerationResult", "TextStream", "check_budget", "generate"]

Prompt = str | Sequence[dict[str, str]]


@dataclass
class GenerationResult:
    """One row's output.

    `finish_reason` is "eos" (the model or the grammar ended the text), "stop" (a stop string was
    generated; `text` ends before it) or "length" (the token budget ran out; with a format and safe
    end the text still parses). `tokens_short` is how many more tokens, at least, the model's own
    continuation needed when the safe end closed the format in its place (0 when it did not): the
    text is valid but not what the model would have written, so raise `max_tokens` by that much.
    With speculation, `drafted` counts the drafted tokens fed to the model and `accepted` those kept
    (the acceptance rate is their ratio); both are 0 without it.
    """

    text: str
    token_ids: list[int]
    finish_reason: str
    forward_passes: int
    passes_saved: int
    tokens_short: int = 0
    drafted: int = 0
    accepted: int = 0


class TextStream:
    """An iterator over the text pieces of one streamed generation; `result` is set at its end."""

    def __init__(self, pieces: Iterator[str], rows: list[_Row]) -> None:
        self._pieces = pieces
        self._rows = rows
        self.result: GenerationResult | None = None

    def __iter__(self) -> Iterator[str]:
        yield from self._pieces
        self.result = self._rows[0].result()


@dataclass
class _Row:
    """The decoding state of one prompt."""

    prompt: list[int]
    pipeline: Pipeline
    state: Any
    matcher: Matcher | None
    sequence: np.ndarray  # [1, capacity] prompt then generated ids, for the processors
    pending: list[int]  # tokens not yet fed to the model
    tokens: list[int] = field(default_factory=list)
    text: str = ""
    emitted: int = 0  # characters already streamed
    finish: str | None = None
    passes: int = 0
    short: int = 0  # tokens the model's continuation lacked when the safe end closed the format
    draft: list[int] = field(default_factory=list)  # drafted tokens fed after `pending` this step
    draft_limit: int | None = None  # at most this many drafted tokens next step (None: the drafter's own k)
    drafted: int = 0
    accepted: int = 0
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    def end(self, reason: str) -> None:
        """Finish with `reason` (the first reason given stands); flush a cut UTF-8 character."""
        if self.finish is None:
            self.finish = reason
            if reason != "stop":
                self.text += self.decoder.decode(b"", final=True)

    def result(self) -> GenerationResult:
        sequential = len(self.tokens) + (self.finish == "eos")
        return GenerationResult(
            self.text,
            list(self.tokens),
            self.finish or "length",
            self.passes,
            sequential - self.passes,
            self.short,
            self.drafted,
            self.accepted,
        )


@overload
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Prompt,
    formats: Format | Sequence[Format] = None,
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    stop: str | Sequence[str] = (),
    stream: Literal[False] = False,
    jump_forward: bool = True,
    safe_end: bool = True,
    processors: Sequence[LogitsProcessor[Any]] = (),
    speculative: int | Drafter = 0,
) -> GenerationResult: ...


@overload
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    formats: Format | Sequence[Format] = None,
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    stop: str | Sequence[str] = (),
    stream: Literal[False] = False,
    jump_forward: bool = True,
    safe_end: bool = True,
    processors: Sequence[LogitsProcessor[Any]] = (),
    speculative: int | Drafter = 0,
) -> list[GenerationResult]: ...


@overload
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Prompt,
    formats: Format | Sequence[Format] = None,
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    stop: str | Sequence[str] = (),
    stream: Literal[True],
    jump_forward: bool = True,
    safe_end: bool = True,
    processors: Sequence[LogitsProcessor[Any]] = (),
    speculative: int | Drafter = 0,
) -> TextStream: ...


def generate(
    model: Any,
    tokenizer: Any,
    prompts: Prompt | Sequence[Prompt],
    formats: Format | Sequence[Format] = None,
    *,
    max_tokens: int = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    stop: str | Sequence[str] = (),
    stream: bool = False,
    jump_forward: bool = True,
    safe_end: bool = True,
    processors: Sequence[LogitsProcessor[Any]] = (),
    speculative: int | Drafter = 0,
) -> GenerationResult | list[GenerationResult] | TextStream:
    """Generate from `prompts` with each row's output constrained by its format.

    `prompts` is one prompt or a list: a prompt is text (used as-is) or a chat, a list of
    `{"role", "content"}` messages put through the tokenizer's chat template. `formats` is one
    format for every row or one per row (`Grammar`, `CompiledGrammar`, or None for free text).
    `temperature` 0 is greedy; otherwise tokens are drawn after temperature and top-p, reproducibly
    for a given `seed`. `stop` strings end a row (the text is cut before them). `processors` run
    after the grammar constraint and before temperature (see `grammask.processors.Pipeline`).
    `speculative` drafts that many tokens a step by prompt lookup (`NgramDrafter`), or takes any
    drafter; the model verifies a draft in the same pass, and the tokens are those decoding without
    it gives (greedy, or sampled with one row).

    Returns a `GenerationResult` for one prompt, a list for a list, or with `stream=True` (one
    prompt only) a `TextStream` of text pieces.
    """
    import torch

    single = isinstance(prompts, str) or (bool(prompts) and isinstance(prompts[0], dict))
    batch = cast("list[Prompt]", [prompts] if single else list(prompts))
    if not batch:
        raise ValueError("no prompts given")
    if stream and len(batch) != 1:
        raise ValueError("stream=True takes a single prompt")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if isinstance(speculative, int) and speculative < 0:
        raise ValueError(f"speculative must be >= 0, got {speculative}")
    stops = [stop] if isinstance(stop, str) else list(stop)
    width = logits_width(model)
    vocab = tokenizer_vocabulary(tokenizer, width)
    compiled = compile_formats(formats, len(batch), tokenizer, width)
    if safe_end:
        for c in {id(c): c for c in compiled if c is not None}.values():
            check_budget(c, tokenizer, max_tokens)
    sampling = [
        *processors,
        *([Temperature(temperature)] if temperature > 0 else []),
        *([TopP(top_p)] if top_p < 1 else []),
    ]
    rows = [_start_row(tokenizer, p, c, sampling, max_tokens) for p, c in zip(batch, compiled, strict=True)]
    decoding = _Decoding(
        model,
        tokenizer,
        vocab,
        rows,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        stops=stops,
        jump_forward=jump_forward,
        safe_end=safe_end,
        drafter=NgramDrafter(k=speculative) if isinstance(speculative, int) and speculative else speculative or None,
        torch=torch,
    )
    if stream:
        return TextStream(decoding.run(), rows)
    for _ in decoding.run():
        pass
    results = [row.result() for row in rows]
    return results[0] if single else results


def check_budget(compiled: CompiledGrammar, tokenizer: Any, max_tokens: int) -> None:
    """Raise ValueError if the shortest text of the format takes more than `max_tokens` tokens.

    `generate` checks this before decoding (with `safe_end`); it needs only the tokenizer, so a
    caller can check before loading the model's weights.
    """
    needed = CanonicalTokenizer(tokenizer, compiled.vocab).needed(compiled.matcher(), max_tokens)
    if needed is not None:
        raise ValueError(f"the format needs at least {needed} tokens but max_tokens is {max_tokens}")


def _start_row(
    tokenizer: Any, prompt: Prompt, compiled: CompiledGrammar | None, sampling: list[LogitsProcessor], max_tokens: int
) -> _Row:
    if isinstance(prompt, str):
        ids = tokenizer.encode(prompt, add_special_tokens=False)
    else:
        ids = tokenizer.apply_chat_template(list(prompt), tokenize=True, add_generation_prompt=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    ids = [int(i) for i in ids]
    if not ids:
        raise ValueError("a prompt must have at least one token")
    pipeline = Pipeline(([GrammarConstraint(compiled)] if compiled is not None else []) + sampling)
    sequence = np.zeros((1, len(ids) + max_tokens + 1), dtype=np.int64)
    sequence[0, : len(ids)] = ids
    return _Row(
        ids, pipeline, pipeline.init(1), None if compiled is None else compiled.matcher(), sequence, pending=list(ids)
    )


class _Decoding:
    """The step loop over a batch of rows; `run()` yields each newly final piece of row 0's text."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        vocab: Vocabulary,
        rows: list[_Row],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stops: list[str],
        jump_forward: bool,
        safe_end: bool,
        drafter: Drafter | None,
        torch: Any,
    ) -> None:
        self.model = model
        self.vocab = vocab
        self.rows = rows
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.stops = stops
        self.hold = max((len(s) for s in stops), default=1) - 1  # characters a stop string may still claim
        self.jump_forward = jump_forward
        self.safe_end = safe_end
        self.drafter = drafter
        self.canonical = CanonicalTokenizer(tokenizer, vocab)
        self.eos = frozenset(vocab.eos_ids)
        self.torch = torch
        self.generator = None if seed is None else torch.Generator().manual_seed(seed)
        self.pad = vocab.eos_ids[0] if vocab.eos_ids else 0
        self.cache: Any = None
        self.device = getattr(model, "device", "cpu")
        self.attention = torch.zeros((len(rows), 0), dtype=torch.long, device=self.device)
        self.positions = [0] * len(rows)
        self.base = 0  # attention columns before the last forward pass
        self.keywords = forward_keywords(model)

    def run(self) -> Iterator[str]:
        with self.torch.inference_mode():
            for row in self.rows:
                if row.matcher is not None:
                    self._extend(row, [])  # text forced at the very start goes in with the prompt
                yield from self._emit(self.rows[0])
            while any(row.finish is None for row in self.rows):
                for row in self.rows:
                    row.draft = self._draft(row) if row.finish is None else []
                logits = self._forward()
                kept = [
                    0 if row_logits is None else self._verify(row, row_logits)
                    for row, row_logits in zip(self.rows, logits, strict=True)
                ]
                self._keep(kept)
                yield from self._emit(self.rows[0])

    # -- model --------------------------------------------------------------------------------------

    def _forward(self) -> list[Any]:
        """One pass over every row's pending and drafted tokens; per live row the logits `[drafted + 1, V]`
        after its last pending token and after each drafted one (None for a finished row)."""
        torch = self.torch
        feeds = [row.pending + row.draft if row.finish is None else [] for row in self.rows]
        starts = [len(row.pending) - 1 for row in self.rows]  # where each row's first wanted logits are
        n = max(len(feed) for feed in feeds)
        ids = torch.full((len(self.rows), n), self.pad, dtype=torch.long)
        fresh = torch.zeros((len(self.rows), n), dtype=torch.long)
        positions = torch.zeros((len(self.rows), n), dtype=torch.long)
        for b, (row, feed) in enumerate(zip(self.rows, feeds, strict=True)):
            k = len(feed)
            if k:
                ids[b, :k] = torch.tensor(feed)
                fresh[b, :k] = 1
                row.passes += 1
            positions[b] = self.positions[b] + torch.arange(n).clamp(max=max(k - 1, 0))
        ids, positions = ids.to(self.device), positions.to(self.device)
        self.base = self.attention.shape[1]
        self.attention = torch.cat([self.attention, fresh.to(self.device)], dim=1)
        # Logits only from the first position some row wants on.
        keep_logits = self.keywords.logits_to_keep
        skip = min(start for start, feed in zip(starts, feeds, strict=True) if feed) if keep_logits else 0
        extra = {"logits_to_keep": n - skip} if keep_logits else {}
        out = self.model(
            input_ids=ids,
            attention_mask=self.attention,
            position_ids=positions,
            use_cache=True,
            **{self.keywords.cache: self.cache},
            **extra,
        )
        self.cache = getattr(out, self.keywords.cache)
        # On the host: processors and the seeded generator then work the same for every device.
        return [
            out.logits[b, start - skip : start - skip + len(row.draft) + 1].float().cpu() if feed else None
            for b, (row, start, feed) in enumerate(zip(self.rows, starts, feeds, strict=True))
        ]

    def _keep(self, kept: list[int]) -> None:
        """After verification, row `b` keeps the first `kept[b]` columns of the last pass: the rest of
        its columns (rejected draft, padding) leave its attention, and the cache is cropped past the
        last column any row kept."""
        for b, k in enumerate(kept):
            self.attention[b, self.base + k :] = 0
            self.positions[b] += k
        length = self.base + max(kept)
        if length < self.attention.shape[1]:
            self.attention = self.attention[:, :length]
            self.cache = crop_cache(self.cache, length)

    def _draft(self, row: _Row) -> list[int]:
        """The drafter's proposal for `row`, cut to what the budget and the grammar can still take."""
        left = self.max_tokens - len(row.tokens) - 1  # the pick after the draft needs a token too
        if self.drafter is None or left <= 0:
            return []
        left = left if row.draft_limit is None else min(left, row.draft_limit)
        context = row.sequence[0, : len(row.prompt) + len(row.tokens)].tolist()
        draft = [int(t) for t in self.drafter.propose(context)][:left]
        if row.matcher is not None:
            return draft[: row.matcher.validate_tokens(draft)]
        return draft[: next((i for i, t in enumerate(draft) if not 0 <= t < self.vocab.size), len(draft))]

    def _verify(self, row: _Row, logits: Any) -> int:
        """Take the tokens `verify_draft` accepts from `row`'s draft; returns how many of the columns
        fed for `row` in the last pass stay valid (its pending tokens and the matching draft)."""
        fed, draft = len(row.pending), row.draft
        row.pending = []

        def take(token: int) -> bool:  # go on only where token-by-token decoding would pick next
            count = len(row.tokens)
            self._extend(row, [token])
            return row.finish is None and len(row.tokens) == count + 1

        accepted = verify_draft(None, draft, logits, lambda step, _: self._pick(row, step[None]), on_accept=take)
        matched = len(accepted) - 1
        matched += matched < len(draft) and accepted[matched] == draft[matched]
        row.pending = row.pending[matched:]  # the matching draft tokens are in the cache already
        row.drafted += len(draft)
        row.accepted += matched
        if draft:  # one more than this draft got accepted: failing drafts shrink to one token
            row.draft_limit = matched + 1
        return fed + matched

    def _pick(self, row: _Row, logits: Any) -> int:
        length = len(row.prompt) + len(row.tokens)
        ctx = GenerationContext(row.sequence[:, :length], len(row.prompt), length)
        if self.temperature > 0:
            token, row.state = row.pipeline.sample(logits, row.state, ctx, self.generator)
        else:
            token, row.state = row.pipeline.greedy(logits, row.state, ctx)
        return int(token[0])

    # -- after a pick -------------------------------------------------------------------------------

    def _extend(self, row: _Row, picked: list[int]) -> None:
        """Take the picked token (if any), the forced text after it, and decide whether the row ends."""
        matcher = row.matcher
        if matcher is None:
            if picked and picked[0] in self.eos:
                row.end("eos")
            else:
                self._append(row, picked)
            return
        trial = matcher.copy()
        for token in picked:
            if not trial.advance(token):
                raise GenerationError(f"token {token} was picked but the grammar does not allow it")
        if trial.is_finished():  # an end-of-sequence token (a grammar may also use it as a token)
            row.end("eos")
            return
        new = list(picked)
        left = self.max_tokens - len(row.tokens) - len(new)
        if self.jump_forward and left > 0:
            new += self.canonical.advance_forced(trial, row.tokens + new, left)
            left = self.max_tokens - len(row.tokens) - len(new)
        # Invariant of the safe end: the shortest completion from `row.matcher` fits in the tokens
        # left. A pick that would break it is undone and that completion appended instead.
        needed = self.canonical.needed(trial, left) if self.safe_end and picked else None
        if needed is not None:
            row.short = needed - left
            self._append(row, self.canonical.completion(matcher) or [], "length")
            return
        row.matcher = trial
        self._append(row, new, "eos" if nothing_but_end_follows(trial) else None)

    def _append(self, row: _Row, tokens: list[int], reason: str | None = None) -> None:
        """Add generated tokens to `row` (ids, text), then end it for a stop string, for `reason`
        if given, or when the budget is spent."""
        start = len(row.prompt) + len(row.tokens)
        row.sequence[0, start : start + len(tokens)] = tokens
        row.tokens += tokens
        row.pending += tokens
        before = len(row.text)
        token_bytes, special = self.vocab.token_bytes, self.vocab.is_special
        row.text += row.decoder.decode(b"".join(token_bytes[t] for t in tokens if not special[t]))
        if self.stops:
            start = max(0, before - self.hold)
            hits = [i for i in (row.text.find(s, start) for s in self.stops) if i >= 0]
            if hits:
                row.text = row.text[: min(hits)]
                row.end("stop")
        if reason is not None:
            row.end(reason)
        if len(row.tokens) >= self.max_tokens:
            row.end("length")

    def _emit(self, row: _Row) -> Iterator[str]:
        """The part of `row`'s text no stop string can still claim, not streamed before."""
        end = len(row.text) if row.finish is not None else max(row.emitted, len(row.text) - self.hold)
        if end > row.emitted:
            yield row.text[row.emitted : end]
            row.emitted = end
