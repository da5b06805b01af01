"""The continuous-batching decode loop in-process, with the real SmolLM2 in float32: a row's greedy
output does not depend on what else is in the batch or when it joined, and speculative decoding (with
frequent cache compaction) gives the same output as token-by-token decoding."""

from __future__ import annotations

import threading
import time
import warnings

import pytest

import grammask
from grammask.serving import scheduler as scheduler_module
from grammask.serving.scheduler import Event, Scheduler, Sequence_

pytestmark = pytest.mark.model

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
REQUESTS = [
    ("Describe a person as JSON.", PERSON),
    ("Tell me a joke.", None),
    ("Three numbers as a JSON array.", {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3}),
]


@pytest.fixture(scope="module")
def float32_model():
    from grammask.generation import load_model

    return load_model(dtype="float32")


class Client:
    """Submits requests to a running scheduler and waits for their final events."""

    def __init__(self, scheduler: Scheduler, model, tokenizer) -> None:
        from grammask.generation import chat_prompt
        from grammask.generation.formats import logits_width, tokenizer_vocabulary

        self.scheduler = scheduler
        self.vocab = tokenizer_vocabulary(tokenizer, logits_width(model))
        self.prompt = lambda text: tokenizer.encode(chat_prompt(tokenizer, text), add_special_tokens=False)

    def submit(self, text, schema, max_tokens=32):
        compiled = None if schema is None else grammask.compile(grammask.Grammar.from_json_schema(schema), self.vocab)
        done, events = threading.Event(), []

        def on_event(event: Event) -> None:
            events.append(event)
            if event.finish_reason or event.error:
                done.set()

        seq = Sequence_(self.prompt(text), compiled, on_event, max_tokens=max_tokens)
        self.scheduler.submit(seq)
        return seq, done, events

    def run(self, requests):
        pending = [self.submit(*r) for r in requests]
        return [self.final(p) for p in pending]

    def idle(self, timeout: float = 10) -> bool:
        """Whether the batch empties within `timeout` s: a finished row leaves it before the next step."""
        deadline = time.monotonic() + timeout
        while self.scheduler.active and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.scheduler.active == 0

    @staticmethod
    def final(pending):
        _, done, events = pending
        assert done.wait(120)
        last = events[-1]
        assert last.error is None and "".join(e.text for e in events) == last.full_text
        return last.full_text, last.finish_reason


@pytest.fixture
def make_client(float32_model):
    started = []

    from grammask.generation.formats import logits_width, tokenizer_vocabulary

    def make(**kwargs):
        model, tokenizer = float32_model
        vocab = tokenizer_vocabulary(tokenizer, logits_width(model))
        scheduler = Scheduler(model, tokenizer, vocab, **kwargs)
        scheduler.start()
        started.append(scheduler)
        return Client(scheduler, model, tokenizer)

    yield make
    for scheduler in started:
        scheduler.stop()


def test_alone_together_and_joining_late_give_the_same_greedy_output(make_client):
    client = make_client()
    alone = [client.run([r])[0] for r in REQUESTS]
    assert client.run(REQUESTS) == alone
    # The first request runs a while alone, then the others join its batch mid-way.
    first = client.submit(*REQUESTS[0])
    while not first[2]:
        time.sleep(0.05)
    late = [client.submit(*r) for r in REQUESTS[1:]]
    assert [client.final(first)] + [client.final(p) for p in late] == alone


def test_decoding_passes_the_cache_under_the_keyword_the_model_takes(make_client):
    """No FutureWarning from transformers 5.24 about `past_key_values` (see `forward_keywords`): as
    an error, it would fail the request."""
    client = make_client()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        text, finish = client.run(REQUESTS[:1])[0]
    assert finish in ("stop", "length")


def test_speculation_gives_the_same_greedy_output(make_client, monkeypatch):
    plain = make_client().run(REQUESTS)
    monkeypatch.setattr(scheduler_module, "COMPACT_AFTER", 2)  # compact the cache at almost every step
    client = make_client(speculative_k=4)
    assert client.run(REQUESTS) == plain
    stats = client.scheduler.stats
    assert stats.drafted_tokens > 0 and stats.accepted_draft_tokens > 0
    assert stats.forward_passes < stats.generated_tokens


def test_a_request_whose_prefill_runs_is_active(make_client):
    client = make_client()
    entered, release = threading.Event(), threading.Event()
    join = client.scheduler._join

    def slow_join(reqs):
        entered.set()
        assert release.wait(30)
        join(reqs)

    client.scheduler._join = slow_join
    pending = client.submit("Tell me a joke.", None, max_tokens=2)
    try:
        assert entered.wait(30)
        assert client.scheduler.active == 1  # neither waiting nor in the batch yet, but not done
    finally:
        release.set()
    client.final(pending)
    assert client.idle()


def test_a_failed_prefill_fails_the_joining_request_and_the_batch_goes_on(make_client):
    client = make_client()
    running = client.submit("Tell me a long story.", None, max_tokens=40)
    while not running[2]:
        time.sleep(0.05)
    forward = client.scheduler._forward

    def failing_prefill(rows, cache, mask):
        if cache is None:
            raise RuntimeError("out of memory")
        return forward(rows, cache, mask)

    client.scheduler._forward = failing_prefill
    _, done, events = client.submit("Tell me a joke.", None)
    assert done.wait(60)
    assert events[-1].error == "generation failed: out of memory"
    assert client.final(running)[1] == "length"
    assert client.scheduler.stats.failed == 1 and client.idle()


def test_cancel_frees_the_row(make_client):
    client = make_client()
    seq, done, events = client.submit("Tell me a long story.", None, max_tokens=200)
    while not events:
        time.sleep(0.05)
    client.scheduler.cancel(seq)
    assert client.idle() and not done.is_set() and client.scheduler.stats.cancelled == 1
    assert client.run([REQUESTS[2]])[0][1] in ("eos", "length")
