"""The HTTP layer: OpenAI-compatible routes on FastAPI, in front of the decode loop.

Each request is read and checked here (body, model name, format, prompt length), its prompt rendered
and its grammar compiled in a thread pool (`Engine.prepare`), never on the event loop or the decode
thread; then it is handed to the `Scheduler` and its events are turned into an OpenAI response or a
stream of server-sent events. Every error is answered in OpenAI's format
`{"error": {"message", "type", "param", "code"}}` with its 4xx status; an error after a stream started
is sent as an `error` event in the stream. A client that disconnects has its row cancelled at once.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from grammask.compiler import CompiledGrammar, compile
from grammask.errors import GrammarError
from grammask.generation.formats import tokenizer_vocabulary
from grammask.generation.loop import check_budget
from grammask.grammar import Grammar
from grammask.limits import DEFAULT_LIMITS
from grammask.serving.formats import request_grammar, with_timeout
from grammask.serving.protocol import APIError, ChatCompletionRequest, CompletionRequest, parse_body
from grammask.serving.scheduler import Event, Scheduler, Sequence_
from grammask.serving.tools import ToolCall, ToolCallParser, parse_tool_calls, render_messages, tool_structural_tag

__all__ = ["Engine", "ServerOptions", "create_app"]

logger = logging.getLogger(__name__)


@dataclass
class ServerOptions:
    """What `grammask serve` was started with (see `grammask serve --help`)."""

    model_name: str
    api_key: str | None = None
    max_concurrent: int = 64
    max_batch: int = 16
    max_model_len: int = 8192
    default_max_tokens: int = 256
    max_format_bytes: int = 256 * 1024
    max_body_bytes: int = 8 * 2**20
    compile_timeout_s: float | None = 30.0
    compile_threads: int = 2
    jump_forward: bool = True
    speculative_k: int = 0
    speculative_max_batch: int = 4


@dataclass
class _Prepared:
    """A request ready for the decode loop."""

    prompt: list[int]
    compiled: CompiledGrammar | None
    max_tokens: int
    tools: bool = False  # the output is read for tool calls


@dataclass
class Engine:
    """The model side of the server: tokenizer, vocabulary, the decode loop, the compile pool."""

    model: Any
    tokenizer: Any
    options: ServerOptions
    vocab: Any = None
    scheduler: Any = None
    pool: Any = None
    in_flight: int = 0
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        width = int(self.model.get_output_embeddings().weight.shape[0])
        self.vocab = tokenizer_vocabulary(self.tokenizer, width)
        self.scheduler = Scheduler(
            self.model,
            self.tokenizer,
            self.vocab,
            max_batch=self.options.max_batch,
            jump_forward=self.options.jump_forward,
            speculative_k=self.options.speculative_k,
            speculative_max_rows=self.options.speculative_max_batch,
        )
        self.pool = ThreadPoolExecutor(self.options.compile_threads, thread_name_prefix="grammask-compile")
        self.limits = with_timeout(DEFAULT_LIMITS, self.options.compile_timeout_s)
        # The vocabulary's tables and the compiled kernels, built now rather than by the first
        # request (and before the app's start freezes what is loaded, see `create_app`).
        compile(Grammar.json(), self.vocab)

    def start(self) -> None:
        self.scheduler.start()

    def stop(self) -> None:
        self.scheduler.stop()
        self.pool.shutdown(wait=False, cancel_futures=True)

    # -- preparing a request (in the thread pool) ------------------------------------------------------

    def prepare(self, request: ChatCompletionRequest | CompletionRequest) -> _Prepared:
        """Prompt ids, compiled grammar and token budget of a request; `APIError` when it cannot run."""
        options = self.options
        tools = False
        grammar_spec = None
        if isinstance(request, ChatCompletionRequest):
            offered = request.tools if request.tools and request.tool_choice != "none" else None
            text = render_messages(self.tokenizer, request.messages, offered)
            prompt = [int(t) for t in self.tokenizer.encode(text, add_special_tokens=False)]
            if offered:
                grammar_spec = tool_structural_tag(
                    offered, request.tool_choice or "auto", parallel=request.parallel_tool_calls
                )
                tools = True
            elif request.tool_choice not in (None, "none", "auto"):
                raise APIError(400, "tool_choice needs tools", param="tool_choice")
            max_tokens = request.max_completion_tokens or request.max_tokens
        else:
            prompt = self._completion_prompt(request.prompt)
            max_tokens = request.max_tokens
        if not prompt:
            raise APIError(400, "the prompt is empty", param="prompt")
        if len(prompt) >= options.max_model_len:
            raise APIError(
                400,
                f"this model's maximum context length is {options.max_model_len} tokens; the prompt has {len(prompt)}",
                param="messages" if isinstance(request, ChatCompletionRequest) else "prompt",
                code="context_length_exceeded",
            )
        room = options.max_model_len - len(prompt)
        if max_tokens is not None and max_tokens > room:
            raise APIError(
                400,
                f"this model's maximum context length is {options.max_model_len} tokens; the prompt has "
                f"{len(prompt)} and max_tokens asks for {max_tokens} more",
                param="max_tokens",
                code="context_length_exceeded",
            )
        max_tokens = max_tokens or min(options.default_max_tokens, room)
        grammar = request_grammar(
            request.response_format,
            request.structured_outputs,
            request.model_extra or {},
            max_format_bytes=options.max_format_bytes,
            limits=self.limits,
        )
        if grammar_spec is not None:
            if grammar is not None:
                raise APIError(400, "an output format cannot be combined with tool calls", param="response_format")
            if len(json.dumps(grammar_spec)) > options.max_format_bytes:
                raise APIError(400, "the tools' schemas are over this server's format size limit", param="tools")
            try:
                from grammask.grammar import Grammar

                grammar = Grammar.from_structural_tag(grammar_spec)
            except GrammarError as exc:
                raise APIError(400, f"invalid tools: {' '.join(str(exc).split())}", param="tools") from None
        compiled = None
        if grammar is not None:
            try:
                compiled = compile(grammar, self.vocab, limits=self.limits)
                compiled.matcher().allowed_token_ids()  # the first mask is part of compiling
                check_budget(compiled, self.tokenizer, max_tokens)
            except GrammarError as exc:
                raise APIError(
                    400, f"the format cannot be compiled: {' '.join(str(exc).split())}", code="invalid_format"
                ) from None
            except ValueError as exc:
                raise APIError(400, str(exc), param="max_tokens") from None
        return _Prepared(prompt, compiled, max_tokens, tools)

    def _completion_prompt(self, prompt: Any) -> list[int]:
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]
        if isinstance(prompt, str):
            return [int(t) for t in self.tokenizer.encode(prompt, add_special_tokens=False)]
        if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            if any(not 0 <= t < self.vocab.size for t in prompt):
                raise APIError(400, "the prompt holds token ids outside the vocabulary", param="prompt")
            return list(prompt)
        raise APIError(400, "only one prompt per request is supported", param="prompt")


class _Guard:
    """ASGI middleware: the API key on /v1 routes (401) and the body size a client declares (413).

    A plain ASGI class, not `BaseHTTPMiddleware`, so that a client's disconnect reaches the route."""

    def __init__(self, app: Any, options: ServerOptions) -> None:
        self.app = app
        self.options = options

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            error = None
            key = self.options.api_key
            if key and scope["path"].startswith("/v1") and headers.get("authorization", "") != f"Bearer {key}":
                error = APIError(401, "invalid or missing API key", type="authentication_error", code="invalid_api_key")
            length = headers.get("content-length", "")
            if error is None and length.isdigit() and int(length) > self.options.max_body_bytes:
                limit = self.options.max_body_bytes
                error = APIError(413, f"the request body is over {limit} bytes", code="request_too_large")
            if error is not None:
                await JSONResponse(error.body(), status_code=error.status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _now() -> int:
    return int(time.time())


def _finish_reason(reason: str | None, calls: bool) -> str:
    if calls:
        return "tool_calls"
    return "length" if reason == "length" else "stop"


def _sse(data: Any) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


class _Run:
    """One request in flight: its sequence in the decode loop and the queue its events arrive on."""

    def __init__(self, engine: Engine, prepared: _Prepared, request: Any) -> None:
        self.engine = engine
        self.prepared = prepared
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def on_event(event: Event) -> None:
            loop.call_soon_threadsafe(self.queue.put_nowait, event)

        self.sequence = Sequence_(
            prepared.prompt,
            prepared.compiled,
            on_event,
            max_tokens=prepared.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
            stop=request.stops(),
        )
        self.done = False

    def start(self) -> None:
        self.engine.scheduler.submit(self.sequence)

    async def events(self) -> AsyncIterator[Event]:
        while True:
            event = await self.queue.get()
            yield event
            if event.finish_reason is not None or event.error is not None:
                self.done = True
                return

    def cancel(self) -> None:
        if not self.done:
            self.engine.scheduler.cancel(self.sequence)
            self.done = True

    def usage(self, completion_tokens: int) -> dict[str, int]:
        prompt = len(self.prepared.prompt)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        }


def create_app(engine: Engine) -> FastAPI:
    """The FastAPI application serving `engine` (starts and stops its decode loop with the app)."""
    options = engine.options

    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine.start()
        # Everything loaded so far (model, tokenizer, vocabulary, modules) lives as long as the
        # server: moved out of the collector's generations, full collections never scan it again.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            engine.stop()

    app = FastAPI(title="grammask", lifespan=lifespan)
    app.add_middleware(_Guard, options=options)

    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return JSONResponse(APIError(exc.status_code, str(exc.detail), type=kind).body(), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("request failed")
        return JSONResponse(APIError(500, f"internal error: {exc}", type="server_error").body(), status_code=500)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        stats = engine.scheduler.stats
        return {"status": "ok", "model": options.model_name, "in_flight": engine.in_flight, "stats": vars(stats)}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [_model_card()]}

    @app.get("/v1/models/{name:path}")
    async def model(name: str) -> dict[str, Any]:
        _check_model(name)
        return _model_card()

    def _model_card() -> dict[str, Any]:
        return {"id": options.model_name, "object": "model", "created": int(engine.started), "owned_by": "grammask"}

    def _check_model(name: str) -> None:
        if name != options.model_name:
            raise APIError(
                404,
                f"the model {name!r} does not exist; this server serves {options.model_name!r}",
                type="invalid_request_error",
                param="model",
                code="model_not_found",
            )

    async def _read(request: Request, kind: type) -> Any:
        raw = await request.body()
        if len(raw) > options.max_body_bytes:
            raise APIError(413, f"the request body is over {options.max_body_bytes} bytes", code="request_too_large")
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise APIError(400, f"the request body is not valid JSON: {exc}") from None
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            _check_model(body["model"])
        return parse_body(kind, body)

    async def _serve(request: Request, kind: type) -> Response:
        if engine.in_flight >= options.max_concurrent:
            raise APIError(
                429,
                f"the server is at its limit of {options.max_concurrent} concurrent requests; retry later",
                type="rate_limit_error",
                code="rate_limit_exceeded",
            )
        engine.in_flight += 1
        release = True
        try:
            body = await _read(request, kind)
            prepared = await asyncio.get_running_loop().run_in_executor(engine.pool, engine.prepare, body)
            run = _Run(engine, prepared, body)
            run.start()
            chat = kind is ChatCompletionRequest
            if body.stream:
                release = False
                include_usage = bool(body.stream_options and body.stream_options.include_usage)
                return StreamingResponse(_stream(run, chat, include_usage), media_type="text/event-stream")
            return await _complete(request, run, chat)
        finally:
            if release:
                engine.in_flight -= 1

    async def _complete(request: Request, run: _Run, chat: bool) -> Response:
        async def collect() -> Event:
            async for event in run.events():
                if event.finish_reason is not None or event.error is not None:
                    return event
            raise AssertionError("unreachable")

        task = asyncio.ensure_future(collect())
        try:
            while not task.done():
                await asyncio.wait([task], timeout=0.25)
                if not task.done() and await request.is_disconnected():
                    run.cancel()
                    task.cancel()
                    return Response(status_code=499)
        finally:
            run.cancel()
        final = task.result()
        if final.error is not None:
            raise APIError(500, final.error, type="server_error")
        usage = run.usage(final.completion_tokens)
        if chat:
            content: str | None = final.full_text
            calls: list[ToolCall] = []
            if run.prepared.tools:
                content, calls = parse_tool_calls(final.full_text)
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = [c.as_dict() for c in calls]
            choice = {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(final.finish_reason, bool(calls)),
            }
            body = {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": _now(),
                "model": options.model_name,
                "choices": [choice],
                "usage": usage,
            }
        else:
            choice = {
                "index": 0,
                "text": final.full_text,
                "logprobs": None,
                "finish_reason": _finish_reason(final.finish_reason, False),
            }
            body = {
                "id": f"cmpl-{uuid.uuid4().hex}",
                "object": "text_completion",
                "created": _now(),
                "model": options.model_name,
                "choices": [choice],
                "usage": usage,
            }
        return JSONResponse(body)

    async def _stream(run: _Run, chat: bool, include_usage: bool) -> AsyncIterator[str]:
        ident = f"chatcmpl-{uuid.uuid4().hex}" if chat else f"cmpl-{uuid.uuid4().hex}"
        created = _now()
        parser = ToolCallParser() if run.prepared.tools else None
        calls = 0

        def chunk(delta: dict[str, Any] | str, finish: str | None = None) -> str:
            if chat:
                choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                body: dict[str, Any] = {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": options.model_name,
                    "choices": [choice],
                }
            else:
                choice = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish}
                body = {
                    "id": ident,
                    "object": "text_completion",
                    "created": created,
                    "model": options.model_name,
                    "choices": [choice],
                }
            if include_usage:
                body["usage"] = None
            return _sse(body)

        def pieces(items: list[str | ToolCall]) -> list[str]:
            nonlocal calls
            out = []
            for item in items:
                if isinstance(item, str):
                    out.append(chunk({"content": item}))
                else:
                    head = {
                        "index": calls,
                        "id": item.id,
                        "type": "function",
                        "function": {"name": item.name, "arguments": ""},
                    }
                    out.append(chunk({"tool_calls": [head]}))
                    out.append(chunk({"tool_calls": [{"index": calls, "function": {"arguments": item.arguments}}]}))
                    calls += 1
            return out

        try:
            if chat:
                yield chunk({"role": "assistant", "content": ""})
            async for event in run.events():
                if event.error is not None:
                    yield _sse(APIError(500, event.error, type="server_error").body())
                    break
                if event.text:
                    if parser is not None:
                        for line in pieces(parser.feed(event.text)):
                            yield line
                    else:
                        yield chunk({"content": event.text} if chat else event.text)
                if event.finish_reason is not None:
                    if parser is not None:
                        for line in pieces(parser.finish()):
                            yield line
                    yield chunk({} if chat else "", _finish_reason(event.finish_reason, calls > 0))
                    if include_usage:
                        usage_body: dict[str, Any] = {
                            "id": ident,
                            "object": "chat.completion.chunk" if chat else "text_completion",
                            "created": created,
                            "model": options.model_name,
                            "choices": [],
                            "usage": run.usage(event.completion_tokens),
                        }
                        yield _sse(usage_body)
            yield "data: [DONE]\n\n"
        finally:
            run.cancel()
            engine.in_flight -= 1

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await _serve(request, ChatCompletionRequest)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await _serve(request, CompletionRequest)

    return app


def default_model_name(path: str | None) -> str:
    """The name a model is served under: the embedded SmolLM2's, or the file's or folder's name."""
    from pathlib import Path

    if path is None:
        return "SmolLM2-135M-Instruct"
    source = Path(path)
    return source.stem if source.is_file() else source.resolve().name


def serve(
    options: ServerOptions,
    *,
    model_path: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    dtype: str = "float32",
    device: str = "cpu",
    log_level: str = "warning",
) -> None:
    """Load the model and serve it until interrupted (what `grammask serve` runs)."""
    import sys

    import uvicorn

    from grammask.generation.model import load_tokenizer, load_weights, prepare_model

    def say(message: str) -> None:
        print(f"grammask: {message}", file=sys.stderr, flush=True)

    folder = prepare_model(model_path, dtype=dtype, announce=say)
    engine = Engine(load_weights(folder, dtype=dtype, device=device), load_tokenizer(folder), options)
    config = getattr(engine.model, "config", None)
    limit = getattr(config, "max_position_embeddings", None)
    if isinstance(limit, int) and limit < options.max_model_len:
        options.max_model_len = limit
    say(f"serving {options.model_name} on http://{host}:{port}/v1 (OpenAI-compatible)")
    uvicorn.run(create_app(engine), host=host, port=port, log_level=log_level)
