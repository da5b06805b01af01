"""Tool calls: the prompt that offers the tools, the grammar of valid calls, and reading calls back.

The call format is the Hermes one (Qwen 2.5, NousResearch Hermes, vLLM's `hermes` parser):

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

A chat template that renders `tools` itself gets them; otherwise (SmolLM2's template has no tools) a
system block in the same words as Qwen 2.5's template lists the functions and this format. The output
is constrained with a structural tag (`Grammar.from_structural_tag`): `tool_choice="auto"` is free
text until the `<tool_call>` trigger, then a call to one of the functions; `"required"` is one or
more calls and nothing else; a named function is calls to that function only. The arguments follow
each function's `parameters` schema, strictly (a missing `additionalProperties` means false), so
every returned `arguments` string validates against it. `parallel_tool_calls=false` allows one call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grammask.serving.protocol import APIError, ChatMessage, Tool, ToolChoiceFunction

__all__ = ["ToolCall", "ToolCallParser", "parse_tool_calls", "render_messages", "tool_structural_tag"]

TRIGGER = "<tool_call>"
BEGIN = "<tool_call>\n"
END = "\n</tool_call>"

_SYSTEM_BLOCK = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


@dataclass
class ToolCall:
    """One call read from the output; `arguments` is JSON text."""

    name: str
    arguments: str
    id: str = ""

    def __post_init__(self) -> None:
        self.id = self.id or f"call_{uuid.uuid4().hex[:24]}"

    def as_dict(self, index: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        if index is not None:
            out["index"] = index
        return out


def _text(message: ChatMessage, where: str) -> str:
    content = message.content
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for i, part in enumerate(content):
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise APIError(400, "only text content parts are supported", param=f"{where}.content.{i}")
        parts.append(part["text"])
    return "".join(parts)


def _call_text(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    arguments = function.get("arguments", "{}")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        parsed = arguments
    return BEGIN + json.dumps({"name": function.get("name"), "arguments": parsed}) + END


def template_renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template reads `tools` (otherwise grammask writes the system block)."""
    return "tools" in str(getattr(tokenizer, "chat_template", None) or "")


def render_messages(tokenizer: Any, messages: Sequence[ChatMessage], tools: Sequence[Tool] | None) -> str:
    """The prompt text: the chat template over the messages, with the tools offered when given."""
    native = bool(tools) and template_renders_tools(tokenizer)
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        text = _text(message, where)
        role = "system" if message.role == "developer" else message.role
        if role == "assistant" and message.tool_calls:
            if native:
                out.append({"role": "assistant", "content": text, "tool_calls": message.tool_calls})
                continue
            text = "\n".join([text] * bool(text) + [_call_text(c) for c in message.tool_calls])
        if role == "tool" and not native:
            role, text = "user", f"<tool_response>\n{text}\n</tool_response>"
        out.append({"role": role, "content": text})
    if tools and not native:
        block = _SYSTEM_BLOCK.format(tools="\n".join(json.dumps(t.model_dump(exclude_none=True)) for t in tools))
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{block}"
        else:
            out.insert(0, {"role": "system", "content": block})
    if not getattr(tokenizer, "chat_template", None):
        return "".join(f"{m['role']}: {m['content']}\n" for m in out) + "assistant: "
    extra = {"tools": [t.model_dump(exclude_none=True) for t in tools or ()]} if native else {}
    try:
        return str(tokenizer.apply_chat_template(out, tokenize=False, add_generation_prompt=True, **extra))
    except Exception as exc:  # a template that rejects the conversation (e.g. roles out of order)
        raise APIError(400, f"the model's chat template rejects these messages: {exc}", param="messages") from None


def _tag(tool: Tool) -> dict[str, Any]:
    parameters = tool.function.parameters or {"type": "object", "properties": {}}
    return {
        "type": "tag",
        "begin": f'{BEGIN}{{"name": {json.dumps(tool.function.name)}, "arguments": ',
        "content": {"type": "json_schema", "json_schema": parameters},
        "end": "}" + END,
    }


def tool_structural_tag(
    tools: Sequence[Tool], choice: str | ToolChoiceFunction, *, parallel: bool
) -> dict[str, Any] | None:
    """The structural tag of the calls `choice` allows (None for "none": the output is free)."""
    if choice == "none":
        return None
    names = [t.function.name for t in tools]
    if len(set(names)) != len(names):
        raise APIError(400, "tools have duplicate function names", param="tools")
    if isinstance(choice, ToolChoiceFunction):
        chosen = [t for t in tools if t.function.name == choice.function.name]
        if not chosen:
            raise APIError(
                400, f"tool_choice names {choice.function.name!r}, which is not in tools", param="tool_choice"
            )
        tools = chosen
    tags = [_tag(t) for t in tools]
    if choice == "auto":
        fmt: dict[str, Any] = {
            "type": "triggered_tags",
            "triggers": [TRIGGER],
            "tags": tags,
            "at_least_one": False,
            "stop_after_first": not parallel,
        }
    else:
        fmt = {
            "type": "tags_with_separator",
            "tags": tags,
            "separator": "\n",
            "at_least_one": True,
            "stop_after_first": not parallel,
        }
    return {"type": "structural_tag", "format": fmt}


def _read_call(text: str, start: int) -> tuple[ToolCall, int] | None:
    """The call whose `<tool_call>` tag opens at `start`, and the index after its end tag; None if
    the text there is not (yet) a whole call."""
    body = start + len(TRIGGER)
    while body < len(text) and text[body].isspace():
        body += 1
    try:
        value, end = json.JSONDecoder().raw_decode(text, body)
    except json.JSONDecodeError:
        return None
    close = text.find("</tool_call>", end)
    if close < 0 or text[end:close].strip():
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", {})
    return ToolCall(value["name"], json.dumps(arguments, ensure_ascii=False)), close + len("</tool_call>")


def parse_tool_calls(text: str) -> tuple[str | None, list[ToolCall]]:
    """The content (text outside calls, or None when only whitespace) and the calls of an output."""
    parser = ToolCallParser()
    pieces = parser.feed(text) + parser.finish()
    content = "".join(p for p in pieces if isinstance(p, str))
    calls = [p for p in pieces if isinstance(p, ToolCall)]
    return (content if content.strip() else None), calls


class ToolCallParser:
    """Splits streamed output into content text and whole `ToolCall`s, in order.

    Content is held back while it could be the start of a `<tool_call>` tag, and whitespace while
    nothing but whitespace has come since the last call (the separators between calls)."""

    def __init__(self) -> None:
        self.buffer = ""
        self.spoken = False  # content other than whitespace has been returned since the last call
        self.pending = ""  # whitespace held back while nothing else has come

    def feed(self, text: str) -> list[str | ToolCall]:
        self.buffer += text
        out: list[str | ToolCall] = []
        while True:
            at = self.buffer.find(TRIGGER)
            if at < 0:
                keep = next(
                    (
                        k
                        for k in range(min(len(TRIGGER) - 1, len(self.buffer)), 0, -1)
                        if TRIGGER.startswith(self.buffer[-k:])
                    ),
                    0,
                )
                self._content(self.buffer[: len(self.buffer) - keep], out)
                self.buffer = self.buffer[len(self.buffer) - keep :]
                return out
            self._content(self.buffer[:at], out)
            self.buffer = self.buffer[at:]
            call = _read_call(self.buffer, 0)
            if call is None:
                return out
            out.append(call[0])
            self.buffer = self.buffer[call[1] :]
            self.spoken, self.pending = False, ""

    def finish(self) -> list[str | ToolCall]:
        """What is left at the end of the output, as content."""
        out: list[str | ToolCall] = []
        self._content(self.buffer, out)
        self.buffer = ""
        return out

    def _content(self, text: str, out: list[str | ToolCall]) -> None:
        if not text:
            return
        if not self.spoken:
            text = self.pending + text
            if not text.strip():
                self.pending = text
                return
            text, self.pending, self.spoken = text.lstrip(), "", True
        out.append(text)
