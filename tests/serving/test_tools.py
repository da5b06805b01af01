"""Tool calls without a model: the call grammar accepts calls and nothing else, calls are read back
from whole and streamed output, and the prompt offers the tools."""

from __future__ import annotations

import json

import pytest

import grammask
from grammask.serving.protocol import ChatMessage, Tool, ToolChoiceFunction
from grammask.serving.tools import ToolCallParser, parse_tool_calls, render_messages, tool_structural_tag

WEATHER = Tool.model_validate(
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
)
NOON = Tool.model_validate({"type": "function", "function": {"name": "noon"}})


def call(name, arguments):
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def accepts(spec, text, vocab):
    matcher = grammask.compile(grammask.Grammar.from_structural_tag(spec), vocab).matcher()
    return matcher.accept_string(text) and matcher.can_finish()


@pytest.mark.parametrize(
    "choice,parallel,text,ok",
    [
        ("required", True, call("get_weather", {"city": "Paris"}), True),
        ("required", True, call("get_weather", {"city": "Paris"}) + "\n" + call("noon", {}), True),
        ("required", False, call("get_weather", {"city": "Paris"}) + "\n" + call("noon", {}), False),
        ("required", True, "Sure. " + call("noon", {}), False),
        ("required", True, call("get_weather", {"town": "Paris"}), False),
        ("required", True, "", False),
        ("auto", True, "Sure. " + call("noon", {}), True),
        ("auto", True, "No call at all.", True),
        ("auto", True, "<tool_call>\nnot json</tool_call>", False),
        (ToolChoiceFunction.model_validate({"function": {"name": "noon"}}), True, call("noon", {}), True),
        (
            ToolChoiceFunction.model_validate({"function": {"name": "noon"}}),
            True,
            call("get_weather", {"city": "a"}),
            False,
        ),
    ],
)
def test_call_grammar(vocab_llama3, choice, parallel, text, ok):
    spec = tool_structural_tag([WEATHER, NOON], choice, parallel=parallel)
    assert accepts(spec, text, vocab_llama3) is ok


def test_none_means_no_grammar():
    assert tool_structural_tag([WEATHER], "none", parallel=True) is None


def test_calls_read_back_whole_and_streamed():
    text = "Let me check.\n" + call("get_weather", {"city": "Paris"}) + "\n" + call("noon", {})
    content, calls = parse_tool_calls(text)
    assert content == "Let me check.\n" and [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("noon", {}),
    ]
    parser = ToolCallParser()
    pieces = [p for ch in text for p in parser.feed(ch)] + parser.finish()
    assert "".join(p for p in pieces if isinstance(p, str)) == content
    assert [c.arguments for c in pieces if not isinstance(c, str)] == [c.arguments for c in calls]
    assert parse_tool_calls("just text <tool_ca") == ("just text <tool_ca", [])


class _Template:
    chat_template = "{{ messages }}"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return json.dumps(messages)


def test_prompt_offers_tools_and_renders_past_calls():
    messages = [
        ChatMessage(role="user", content="Weather?"),
        ChatMessage(role="assistant", tool_calls=[{"function": {"name": "get_weather", "arguments": '{"city": "X"}'}}]),
        ChatMessage(role="tool", content="15 C"),
    ]
    rendered = json.loads(render_messages(_Template(), messages, [WEATHER]))
    assert rendered[0]["role"] == "system" and '"get_weather"' in rendered[0]["content"]
    assert "<tool_call>" in rendered[2]["content"] and rendered[3]["role"] == "user"
    assert "<tool_response>" in rendered[3]["content"]
