"""The HTTP layer over a scripted decode loop (no model): the SSE chunk format, usage, tool-call
deltas, and an error after the stream started, sent as an event in the stream."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("fastapi")

from grammask.serving.app import Engine, ServerOptions, _Prepared, create_app  # noqa: E402
from grammask.serving.scheduler import Event, SchedulerStats  # noqa: E402


class ScriptedScheduler:
    """Answers every request with the scripted events, on the caller's thread."""

    def __init__(self, events):
        self.events = events
        self.stats = SchedulerStats()
        self.cancelled = 0

    def submit(self, seq):
        for event in self.events:
            seq.on_event(event)

    def cancel(self, seq):
        self.cancelled += 1


class ScriptedEngine(Engine):
    def __post_init__(self) -> None:
        self.pool = None

    def prepare(self, request):
        return _Prepared([1, 2, 3], None, 16, tools=bool(getattr(request, "tools", None)))


def post(events, body):
    """POST `body` to /v1/chat/completions of an app over `events`; (status, response text)."""
    engine = ScriptedEngine(model=None, tokenizer=None, options=ServerOptions(model_name="m"))
    engine.scheduler = ScriptedScheduler(events)
    app = create_app(engine)
    data = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], **body}).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent, received = [], [{"type": "http.request", "body": data, "more_body": False}]

    async def receive():
        if received:
            return received.pop(0)
        await asyncio.sleep(3600)

    async def send(message):
        sent.append(message)

    asyncio.run(asyncio.wait_for(app(scope, receive, send), 10))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


def events_of(text):
    assert text.endswith("data: [DONE]\n\n")
    return [json.loads(line[6:]) for line in text.split("\n\n") if line.startswith("data: {")]


def test_stream_chunks_and_usage():
    status, text = post(
        [Event(text='{"a"'), Event(text=": 1}"), Event(finish_reason="eos", completion_tokens=5, full_text='{"a": 1}')],
        {"stream": True, "stream_options": {"include_usage": True}},
    )
    chunks = events_of(text)
    assert status == 200 and chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]) == '{"a": 1}'
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    assert all(c["object"] == "chat.completion.chunk" and "usage" in c for c in chunks)


def test_error_after_the_stream_started_is_an_event():
    status, text = post([Event(text="partial"), Event(error="generation failed: boom")], {"stream": True})
    chunks = events_of(text)
    assert status == 200 and chunks[1]["choices"][0]["delta"]["content"] == "partial"
    assert chunks[-1]["error"]["message"] == "generation failed: boom" and chunks[-1]["error"]["type"] == "server_error"


def test_error_before_an_answer_is_a_500_in_openai_format():
    status, text = post([Event(error="generation failed: boom")], {})
    assert status == 500 and json.loads(text)["error"]["message"] == "generation failed: boom"


def test_tool_calls_streamed_as_openai_deltas():
    call = '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    pieces = [Event(text=call[i : i + 7]) for i in range(0, len(call), 7)]
    status, text = post(
        [*pieces, Event(finish_reason="eos", completion_tokens=9, full_text=call)], {"stream": True, "tools": tools}
    )
    deltas = [c["choices"][0]["delta"] for c in events_of(text)]
    calls = [d["tool_calls"][0] for d in deltas if d.get("tool_calls")]
    assert calls[0]["function"] == {"name": "f", "arguments": ""} and calls[0]["id"].startswith("call_")
    assert calls[1] == {"index": 0, "function": {"arguments": '{"x": 1}'}}
    assert (
        not any(d.get("content") for d in deltas) and events_of(text)[-1]["choices"][0]["finish_reason"] == "tool_calls"
    )
