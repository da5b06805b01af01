"""The OpenAI-compatible request bodies the server reads, and OpenAI's error format.

Bodies are validated with pydantic; fields the server cannot honour are refused with a 400 that names
them (never ignored silently): `n` > 1, `logprobs`, `echo`, `best_of` > 1, `suffix`, non-zero
penalties, a non-empty `logit_bias`. Fields it does not know are ignored, as OpenAI does, except vLLM's
removed `guided_*` fields, which are read or refused by `grammask.serving.formats`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "APIError",
    "ChatCompletionRequest",
    "ChatMessage",
    "CompletionRequest",
    "FunctionDefinition",
    "JSONSchemaFormat",
    "ResponseFormat",
    "StreamOptions",
    "StructuredOutputs",
    "Tool",
    "ToolChoiceFunction",
    "parse_body",
]


class APIError(Exception):
    """An error answered in OpenAI's format: `{"error": {"message", "type", "param", "code"}}`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class JSONSchemaFormat(_Body):
    """`response_format.json_schema`: with `strict`, a missing `additionalProperties` means false."""

    name: str = "response"
    description: str | None = None
    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Body):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None


class StructuredOutputs(_Body):
    """vLLM's `structured_outputs` body field: exactly one of the constraints may be set."""

    json_: dict[str, Any] | str | bool | None = Field(default=None, alias="json")
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None
    structural_tag: dict[str, Any] | str | None = None
    json_object: bool | None = None
    whitespace_pattern: str | None = None
    disable_any_whitespace: bool = False


class StreamOptions(_Body):
    include_usage: bool = False


class FunctionDefinition(_Body):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_.-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Body):
    type: Literal["function"] = "function"
    function: FunctionDefinition


class _NamedFunction(_Body):
    name: str


class ToolChoiceFunction(_Body):
    type: Literal["function"] = "function"
    function: _NamedFunction


class ChatMessage(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class _Sampling(_Body):
    model: str
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0, le=2)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1)
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: dict[str, float] | None = None
    response_format: ResponseFormat | None = None
    structured_outputs: StructuredOutputs | None = None

    def stops(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return [s for s in stops if s]

    def refuse_unsupported(self) -> None:
        """400 for each field the server would otherwise have to ignore."""
        if self.n != 1:
            raise APIError(400, "only n=1 is supported", param="n")
        if self.presence_penalty or self.frequency_penalty:
            param = "presence_penalty" if self.presence_penalty else "frequency_penalty"
            raise APIError(400, f"{param} is not supported (send 0 or leave it out)", param=param)
        if self.logit_bias:
            raise APIError(400, "logit_bias is not supported", param="logit_bias")


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | ToolChoiceFunction | None = None
    parallel_tool_calls: bool = True
    logprobs: bool | None = None
    top_logprobs: int | None = None

    def refuse_unsupported(self) -> None:
        super().refuse_unsupported()
        if self.logprobs or self.top_logprobs:
            raise APIError(400, "logprobs are not supported", param="logprobs")


class CompletionRequest(_Sampling):
    prompt: str | list[str] | list[int] | list[list[int]]
    echo: bool = False
    logprobs: int | None = None
    best_of: int | None = None
    suffix: str | None = None

    def refuse_unsupported(self) -> None:
        super().refuse_unsupported()
        for name, value in (("echo", self.echo), ("logprobs", self.logprobs), ("suffix", self.suffix)):
            if value:
                raise APIError(400, f"{name} is not supported", param=name)
        if self.best_of not in (None, 1):
            raise APIError(400, "best_of is not supported", param="best_of")


def parse_body(kind: type[_Sampling], body: Any) -> Any:
    """`body` (decoded JSON) as a request of `kind`; a 400 naming the first bad field otherwise."""
    if not isinstance(body, dict):
        raise APIError(400, "the request body must be a JSON object")
    try:
        request = kind.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise APIError(400, f"{where}: {error['msg']}" if where else error["msg"], param=where or None) from None
    request.refuse_unsupported()
    return request
