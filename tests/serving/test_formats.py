"""Request fields to grammars, and the 400s for bad or ambiguous formats (no model)."""

from __future__ import annotations

import pytest

from grammask.serving.formats import request_grammar
from grammask.serving.protocol import APIError, ChatCompletionRequest, CompletionRequest, parse_body

LIMIT = 10_000


def grammar_of(body):
    request = parse_body(ChatCompletionRequest, {"model": "m", "messages": [{"role": "user", "content": "hi"}], **body})
    return request_grammar(
        request.response_format, request.structured_outputs, request.model_extra or {}, max_format_bytes=LIMIT
    )


def accepts(grammar, text, vocab):
    import grammask

    matcher = grammask.compile(grammar, vocab).matcher()
    return matcher.accept_string(text) and matcher.can_finish()


@pytest.mark.parametrize(
    "body,good,bad",
    [
        ({"response_format": {"type": "json_object"}}, '{"a": 1}', "[1]"),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "x",
                        "strict": True,
                        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
                    },
                }
            },
            '{"a": 1}',
            '{"a": 1, "b": 2}',
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "x",
                        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
                    },
                }
            },
            '{"a": 1, "b": 2}',
            '{"a": "1"}',
        ),
        ({"structured_outputs": {"json": {"type": "integer"}}}, "12", "1.5"),
        ({"structured_outputs": {"regex": "[0-9]+"}}, "12", "x"),
        ({"structured_outputs": {"choice": ["yes", "no"]}}, "no", "maybe"),
        ({"structured_outputs": {"grammar": 'root ::= "a"+'}}, "aaa", "b"),
        ({"structured_outputs": {"grammar": 'start: "a"+'}}, "aa", "b"),
        ({"structured_outputs": {"json": {"type": "object"}, "disable_any_whitespace": True}}, "{}", "{ }"),
        ({"guided_choice": ["yes", "no"]}, "yes", "maybe"),
        ({"guided_json": {"type": "integer"}, "guided_decoding_backend": "grammask"}, "3", "x"),
    ],
)
def test_formats(vocab_llama3, body, good, bad):
    grammar = grammar_of(body)
    assert accepts(grammar, good, vocab_llama3) and not accepts(grammar, bad, vocab_llama3)


def test_text_and_nothing_are_free():
    assert grammar_of({}) is None and grammar_of({"response_format": {"type": "text"}}) is None


@pytest.mark.parametrize(
    "body,param",
    [
        (
            {"response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"}},
            "structured_outputs.regex",
        ),
        ({"structured_outputs": {"regex": "a", "choice": ["a"]}}, "structured_outputs.choice"),
        ({"structured_outputs": {"regex": "a"}, "guided_regex": "b"}, "guided_regex"),
        ({"guided_whitespace_pattern": " "}, "guided_whitespace_pattern"),
        ({"guided_decoding_backend": "outlines", "guided_regex": "a"}, "guided_decoding_backend"),
        ({"structured_outputs": {"regex": "a", "whitespace_pattern": " "}}, "structured_outputs.whitespace_pattern"),
        ({"structured_outputs": {"regex": "a("}}, "structured_outputs.regex"),
        ({"structured_outputs": {"regex": "a" * (LIMIT + 1)}}, "structured_outputs.regex"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 3}}}},
            "response_format",
        ),
        (
            {"structured_outputs": {"structural_tag": {"type": "structural_tag", "format": {"type": "nope"}}}},
            "structured_outputs.structural_tag",
        ),
    ],
)
def test_bad_formats_are_400_naming_the_field(body, param):
    with pytest.raises(APIError) as err:
        grammar_of(body)
    assert err.value.status == 400 and err.value.param == param


@pytest.mark.parametrize(
    "kind,body,param",
    [
        (ChatCompletionRequest, {"model": "m", "messages": []}, "messages"),
        (ChatCompletionRequest, {"messages": [{"role": "user", "content": "hi"}]}, "model"),
        (ChatCompletionRequest, {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}, "n"),
        (
            ChatCompletionRequest,
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "logprobs": True},
            "logprobs",
        ),
        (CompletionRequest, {"model": "m", "prompt": "x", "echo": True}, "echo"),
        (CompletionRequest, {"model": "m", "prompt": "x", "temperature": 5}, "temperature"),
        (CompletionRequest, {"model": "m", "prompt": "x", "presence_penalty": 1}, "presence_penalty"),
    ],
)
def test_bad_bodies_are_400_naming_the_field(kind, body, param):
    with pytest.raises(APIError) as err:
        parse_body(kind, body)
    assert err.value.status == 400 and err.value.param == param
    assert set(err.value.body()["error"]) == {"message", "type", "param", "code"}
