"""`grammask serve` as a real subprocess, driven with the official `openai` client: structured outputs,
tools, a trigger-started format, streaming, continuous batching, bad input, disconnects.

One server for the whole module (with an API key, speculative decoding and jump-forward on, small
limits so the bad-input cases are cheap to reach); outputs are checked with `jsonschema` and
`re.fullmatch`, never against fixed text except where batching must not change it.
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from .server import running

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("fastapi")

pytestmark = pytest.mark.model

KEY = "test-key"
MODEL = "SmolLM2-135M-Instruct"
MAX_CONCURRENT = 6
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 30}, "unit": {"enum": ["C", "F"]}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Get the local time in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 30}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def server():
    args = ["--api-key", KEY, "--max-concurrent", str(MAX_CONCURRENT), "--max-batch", "8", "--speculative-k", "3"]
    args += ["--max-model-len", "2048", "--max-format-bytes", "20000", "--compile-timeout", "20"]
    args += ["--max-body-bytes", "300000"]
    with running(*args) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key=KEY, max_retries=0, timeout=120)


def chat(client, content, **kwargs):
    kwargs.setdefault("max_tokens", 40)
    messages = content if isinstance(content, list) else [{"role": "user", "content": content}]
    return client.chat.completions.create(model=MODEL, messages=messages, temperature=0, **kwargs)


def streamed(client, content, **kwargs):
    """The text, finish reason, tool-call deltas and usage of a streamed chat completion."""
    stream = chat(client, content, stream=True, stream_options={"include_usage": True}, **kwargs)
    text, finish, calls, usage = "", None, {}, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for call in choice.delta.tool_calls or ():
                entry = calls.setdefault(call.index, {"name": "", "arguments": ""})
                entry["name"] += call.function.name or ""
                entry["arguments"] += call.function.arguments or ""
    return text, finish, list(calls.values()), usage


def raw(server, path, body, *, key=KEY):
    """POST raw bytes; (status, decoded JSON body)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(server.base_url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# -- basics -------------------------------------------------------------------------------------------


def test_models_and_health(server, client):
    assert [m.id for m in client.models.list().data] == [MODEL]
    assert server.get("/health")["status"] == "ok"


def test_completions_plain_and_streamed(client):
    result = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=6, temperature=0)
    assert result.choices[0].text and result.usage.completion_tokens <= 6 and result.usage.prompt_tokens == 5
    pieces = client.completions.create(
        model=MODEL, prompt="The capital of France is", max_tokens=6, temperature=0, stream=True
    )
    assert "".join(c.choices[0].text for c in pieces if c.choices) == result.choices[0].text


# -- structured outputs -------------------------------------------------------------------------------


def test_json_schema_strict(client):
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    result = chat(client, "Invent a person. Answer in JSON.", response_format=fmt)
    value = json.loads(result.choices[0].message.content)
    jsonschema.validate(value, PERSON)
    assert set(value) <= {"name", "age"}  # strict: no property the schema does not declare
    assert result.choices[0].finish_reason == "stop"


def test_json_schema_streamed_with_usage(client):
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}
    text, finish, _, usage = streamed(client, "Invent a person. Answer in JSON.", response_format=fmt)
    jsonschema.validate(json.loads(text), PERSON)
    assert finish in ("stop", "length") and usage is not None and usage.completion_tokens > 0


def test_json_object(client):
    result = chat(client, "Describe a cat as a JSON object.", response_format={"type": "json_object"}, max_tokens=30)
    assert isinstance(json.loads(result.choices[0].message.content), dict)


@pytest.mark.parametrize("stream", [False, True])
def test_regex(client, stream):
    so = {"structured_outputs": {"regex": r"\d{3}-\d{4}"}}
    if stream:
        text = streamed(client, "Invent a phone number.", extra_body=so)[0]
    else:
        text = chat(client, "Invent a phone number.", extra_body=so).choices[0].message.content
    assert re.fullmatch(r"\d{3}-\d{4}", text)


def test_choice_streamed(client):
    text, finish, _, _ = streamed(
        client, "Pick a colour.", extra_body={"structured_outputs": {"choice": ["red", "green", "blue"]}}
    )
    assert text in ("red", "green", "blue") and finish == "stop"


@pytest.mark.parametrize(
    "grammar",
    ['root ::= ("yes" | "no") "."', 'start: ANSWER "."\nANSWER: "yes" | "no"'],
    ids=["gbnf", "lark"],
)
def test_grammar(client, grammar):
    text = (
        chat(client, "Is water wet?", extra_body={"structured_outputs": {"grammar": grammar}})
        .choices[0]
        .message.content
    )
    assert text in ("yes.", "no.")


def test_guided_field_is_read(client):
    text = (
        chat(client, "Invent a phone number.", extra_body={"guided_regex": r"\d{3}-\d{4}"}).choices[0].message.content
    )
    assert re.fullmatch(r"\d{3}-\d{4}", text)


def test_trigger_started_format(client):
    """Free text until the `<answer>` trigger, then JSON under a schema (a structural tag)."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    answer = {
        "type": "tag",
        "begin": "<answer>",
        "content": {"type": "json_schema", "json_schema": schema},
        "end": "</answer>",
    }
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<answer>"],
            "tags": [answer],
            "at_least_one": False,
            "stop_after_first": True,
        },
    }
    shots = [("France", "Paris"), ("Italy", "Rome")]
    prompt = "".join(
        f"Q: What is the capital of {c}?\nThoughts: {c} is in Europe; its capital is {a}.\n"
        f'<answer>{{"city": "{a}"}}</answer>\n\n'
        for c, a in shots
    )
    prompt += "Q: What is the capital of Spain?\nThoughts:"
    result = openai_completion(client, prompt, {"structured_outputs": {"structural_tag": json.dumps(tag)}})
    before, trigger, after = result.partition("<answer>")
    assert trigger and before.strip()  # free text first, then the trigger
    body = after.removesuffix("</answer>")
    assert after.endswith("</answer>") and jsonschema.validate(json.loads(body), schema) is None


def openai_completion(client, prompt, extra_body):
    return (
        client.completions.create(model=MODEL, prompt=prompt, max_tokens=40, temperature=0, extra_body=extra_body)
        .choices[0]
        .text
    )


# -- tools --------------------------------------------------------------------------------------------


def check_calls(calls, names=("get_weather", "get_time")):
    tools = {"get_weather": WEATHER, "get_time": TIME}
    for call in calls:
        name, arguments = (
            (call.function.name, call.function.arguments)
            if hasattr(call, "function")
            else (call["name"], call["arguments"])
        )
        assert name in names
        jsonschema.validate(json.loads(arguments), tools[name]["function"]["parameters"])


def test_tool_choice_required(client):
    result = chat(client, "What is the weather in Paris?", tools=[WEATHER, TIME], tool_choice="required")
    choice = choice0 = result.choices[0]
    assert choice.finish_reason == "tool_calls" and choice0.message.tool_calls and not choice.message.content
    check_calls(choice.message.tool_calls)


def test_tool_choice_named_streamed(client):
    named = {"type": "function", "function": {"name": "get_time"}}
    text, finish, calls, _ = streamed(client, "What is the weather in Paris?", tools=[WEATHER, TIME], tool_choice=named)
    assert finish == "tool_calls" and calls and not text.strip()
    check_calls(calls, names=("get_time",))


def test_tool_choice_required_without_parallel_calls_makes_one(client):
    result = chat(
        client,
        "Weather and time in Paris and Rome?",
        tools=[WEATHER, TIME],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=80,
    )
    assert len(result.choices[0].message.tool_calls) == 1
    check_calls(result.choices[0].message.tool_calls)


def test_tool_choice_auto_text_then_call(client):
    prompt = "Reply with a <tool_call> that calls get_weather for Paris."
    result = chat(client, prompt, tools=[WEATHER], tool_choice="auto")
    message = result.choices[0].message
    assert message.tool_calls and result.choices[0].finish_reason == "tool_calls"
    check_calls(message.tool_calls)
    assert "<tool_call>" not in (message.content or "")
    text, finish, calls, _ = streamed(client, prompt, tools=[WEATHER], tool_choice="auto")
    assert finish == "tool_calls" and [c["arguments"] for c in calls] == [
        c.function.arguments for c in message.tool_calls
    ]
    assert text == (message.content or "")


def test_tool_choice_auto_may_answer_in_text(client):
    result = chat(client, "Say hello.", tools=[WEATHER], tool_choice="auto", max_tokens=12)
    assert result.choices[0].message.content and not result.choices[0].message.tool_calls


def test_tool_choice_none_is_free_text(client):
    result = chat(client, "What is the weather in Paris?", tools=[WEATHER], tool_choice="none", max_tokens=12)
    assert result.choices[0].message.tool_calls is None and result.choices[0].finish_reason in ("stop", "length")


def test_tool_results_in_the_conversation(client):
    messages = [
        {"role": "user", "content": "What is the weather in London?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "London"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "15 C, cloudy"},
    ]
    result = chat(client, messages, tools=[WEATHER], max_tokens=12)
    assert result.choices[0].message.content


# -- continuous batching ----------------------------------------------------------------------------


def test_batching_does_not_change_greedy_output(client):
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}
    request = {"content": "Invent a person. Answer in JSON.", "response_format": fmt}
    alone = chat(client, **request).choices[0].message.content
    others = [
        {"content": "Tell me a story.", "max_tokens": 30},
        {"content": "Invent a phone number.", "extra_body": {"structured_outputs": {"regex": r"\d{3}-\d{4}"}}},
        {"content": "What is the weather in Paris?", "tools": [WEATHER], "tool_choice": "required"},
    ]
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(chat, client, **o) for o in others]
        together = pool.submit(chat, client, **request)
        results = [f.result() for f in futures]
    assert together.result().choices[0].message.content == alone
    assert re.fullmatch(r"\d{3}-\d{4}", results[1].choices[0].message.content)


# -- bad input ----------------------------------------------------------------------------------------


def test_malformed_json_body(server):
    status, body = raw(server, "/v1/chat/completions", b'{"model": "x", "messages": [')
    assert status == 400 and set(body["error"]) == {"message", "type", "param", "code"}
    assert "not valid JSON" in body["error"]["message"]


def test_oversized_body_is_413(server):
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 400_000}]}
    status, answer = raw(server, "/v1/chat/completions", body)
    assert status == 413 and answer["error"]["code"] == "request_too_large"


def test_missing_or_wrong_api_key(server):
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    for key in (None, "wrong"):
        status, answer = raw(server, "/v1/chat/completions", body, key=key)
        assert status == 401 and answer["error"]["code"] == "invalid_api_key"


def test_unknown_model(client):
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="gpt-nonexistent", messages=[{"role": "user", "content": "hi"}])
    assert err.value.code == "model_not_found"


BAD = {
    "invalid schema": {
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}}
    },
    "unsupported schema": {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
        }
    },
    "invalid regex": {"extra_body": {"structured_outputs": {"regex": "a(b"}}},
    "invalid grammar": {"extra_body": {"structured_outputs": {"grammar": "root ::= undefined_rule"}}},
    "grammar over compile limits": {"extra_body": {"structured_outputs": {"regex": "[ab]*a[ab]{20}"}}},
    "oversized schema": {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "x",
                "schema": {"type": "object", "properties": {f"p{i:05d}": {"type": "string"} for i in range(2000)}},
            },
        }
    },
    "two formats": {"response_format": {"type": "json_object"}, "extra_body": {"structured_outputs": {"regex": "a"}}},
    "removed guided field": {"extra_body": {"guided_whitespace_pattern": " "}},
    "other backend": {"extra_body": {"guided_json": {"type": "object"}, "guided_decoding_backend": "outlines"}},
    "unsupported n": {"n": 2},
    "bad temperature": {"extra_body": {"temperature": "hot"}},
    "format needs more tokens": {
        "max_tokens": 2,
        "extra_body": {"structured_outputs": {"choice": ["a long answer here"]}},
    },
    "format with tools": {"tools": [WEATHER], "tool_choice": "required", "response_format": {"type": "json_object"}},
    "unknown tool": {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
    "oversized prompt": {"content": "hello " * 3000},
    "max_tokens past the context": {"max_tokens": 4000},
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_is_400(client, case):
    kwargs = dict(BAD[case])
    content = kwargs.pop("content", "hi")
    start = time.monotonic()
    with pytest.raises(openai.BadRequestError) as err:
        chat(client, content, **kwargs)
    assert err.value.status_code == 400 and err.value.body["message"] and time.monotonic() - start < 30
    if case in ("oversized prompt", "max_tokens past the context"):
        assert err.value.code == "context_length_exceeded"


def test_too_many_concurrent_requests_then_disconnects_free_rows(server, client):
    """Fill the server with streams, get a 429, drop the streams mid-way: every row is freed."""
    cancelled = server.get("/health")["stats"]["cancelled"]
    streams = []
    for _ in range(MAX_CONCURRENT):
        stream = chat(client, "Tell me a very long story.", stream=True, max_tokens=400)
        next(iter(stream))  # the request is in flight
        streams.append(stream)
    with pytest.raises(openai.RateLimitError) as err:
        chat(client, "hi", max_tokens=2)
    assert err.value.status_code == 429 and err.value.code == "rate_limit_exceeded"
    for stream in streams:
        next(iter(stream))
        stream.close()  # the client goes away mid-stream
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        health = server.get("/health")
        if health["in_flight"] == 0 and health["stats"]["cancelled"] >= cancelled + MAX_CONCURRENT:
            break
        time.sleep(0.2)
    assert health["in_flight"] == 0 and health["stats"]["cancelled"] >= cancelled + MAX_CONCURRENT, health
    text = (
        chat(client, "Pick one.", extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
        .choices[0]
        .message.content
    )
    assert text in ("yes", "no")


def test_disconnect_while_waiting_for_a_non_streamed_answer(server):
    # The format allows no end before 2,000 characters, so the answer cannot finish before the client leaves.
    body = json.dumps(
        {
            "model": MODEL,
            "messages": [{"role": "user", "content": "Tell a long story."}],
            "max_tokens": 600,
            "structured_outputs": {"regex": "[a-z ]{2000,}"},
        }
    )
    cancelled = server.get("/health")["stats"]["cancelled"]
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port)) as conn:
        conn.sendall(head.encode() + body.encode())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and server.get("/health")["in_flight"] == 0:
            time.sleep(0.1)
        time.sleep(1)  # decoding has started
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and server.get("/health")["stats"]["cancelled"] <= cancelled:
        time.sleep(0.2)
    health = server.get("/health")
    assert health["stats"]["cancelled"] > cancelled and health["in_flight"] == 0, health


def test_server_still_serves_after_everything(server, client):
    assert server.proc.poll() is None
    text = (
        chat(client, "Invent a phone number.", extra_body={"structured_outputs": {"regex": r"\d{3}-\d{4}"}})
        .choices[0]
        .message.content
    )
    assert re.fullmatch(r"\d{3}-\d{4}", text)
