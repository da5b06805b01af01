"""The `grammask` command: `grammask generate "PROMPT" --json-schema person.json` and friends.

Everything that can be checked before the model's weights load is checked first: the arguments,
the format, the model path, and (with the tokenizer) whether the format fits in `--max-tokens` and
survives `--forbid-chars`. Every error is one line on stderr. Exit status: 0 done, 1 generation or
the machine failed, 2 bad input, 130 interrupted. Output streams to stdout; warnings (keywords
`--lenient` dropped, output closed early by the token budget) and steps that take more than a
second go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grammask.errors import GenerationError, GrammaskError
from grammask.grammar import Grammar

__all__ = ["main"]

#: Seconds a step may take before the command says what it is doing.
PROGRESS_AFTER = 1.0


class _BadInput(Exception):
    """An argument that cannot be used; the message is the one line the user sees."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error reported on one line like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"grammask: error: {message}\n")


def _version() -> str:
    try:
        return importlib.metadata.version("grammask")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="grammask", description="Constrained text generation.")
    parser.add_argument("--version", action="version", version=f"grammask {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser(
        "generate",
        help="generate text that follows a format",
        description="Generate text that follows a format, streamed to stdout. Exit status: 0 done, "
        "1 generation failed, 2 bad input.",
    )
    gen.add_argument("prompt", help="the request, sent to the model as a chat message")
    fmt = gen.add_mutually_exclusive_group()
    fmt.add_argument("--json-schema", metavar="FILE", help="JSON Schema file the output must satisfy")
    fmt.add_argument("--pydantic", metavar="MODULE:CLASS", help="pydantic model the output must satisfy")
    fmt.add_argument("--regex", metavar="RE", help="regular expression the whole output must match")
    fmt.add_argument("--grammar", metavar="FILE", help="GBNF (.gbnf) or Lark (.lark) grammar file")
    fmt.add_argument("--choice", nargs="+", metavar="TEXT", help="the output is exactly one of these")
    gen.add_argument(
        "--lenient",
        action="store_true",
        help="with --json-schema or --pydantic: drop keywords that cannot be enforced exactly "
        "(each is printed as a warning) instead of failing",
    )
    gen.add_argument("--forbid-chars", metavar="CHARS", help="never output any of these characters")
    gen.add_argument(
        "--model",
        metavar="PATH",
        help="GGUF file with weights or transformers model folder (default: the embedded SmolLM2-135M-Instruct)",
    )
    gen.add_argument("--device", default="cpu", help="torch device to run the model on (default: %(default)s)")
    gen.add_argument(
        "--max-tokens",
        type=int,
        default=256,
        metavar="N",
        help="most tokens to generate; a format is closed early to fit (default: %(default)s)",
    )
    gen.add_argument(
        "--temperature", type=float, default=0.0, metavar="T", help="sampling temperature; 0 is greedy (default: 0)"
    )
    gen.add_argument("--seed", type=int, metavar="S", help="random seed, for reproducible sampling when T > 0")
    gen.add_argument(
        "--stop", action="append", default=[], metavar="TEXT", help="stop before this text (may be repeated)"
    )
    _serve_parser(commands)
    return parser


def _serve_parser(commands: Any) -> None:
    srv = commands.add_parser(
        "serve",
        help="serve a model over an OpenAI-compatible HTTP API",
        description="Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, "
        "/v1/models, /health) with structured outputs and tool calls. Needs the `server` extra.",
    )
    srv.add_argument(
        "--model", metavar="PATH", help="GGUF file or transformers model folder (default: the embedded SmolLM2)"
    )
    srv.add_argument(
        "--served-model-name", metavar="NAME", help="the model name clients send (default: from the model)"
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    srv.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    srv.add_argument("--api-key", metavar="KEY", help="require 'Authorization: Bearer KEY' on /v1 routes")
    srv.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    srv.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "bfloat16", "float16"],
        help="weights' dtype (default: %(default)s)",
    )
    srv.add_argument(
        "--max-batch", type=int, default=16, metavar="N", help="rows decoded together (default: %(default)s)"
    )
    srv.add_argument(
        "--max-concurrent",
        type=int,
        default=64,
        metavar="N",
        help="requests in flight before 429 (default: %(default)s)",
    )
    srv.add_argument(
        "--max-model-len", type=int, default=8192, metavar="N", help="prompt plus output tokens (default: %(default)s)"
    )
    srv.add_argument(
        "--max-tokens",
        type=int,
        default=256,
        metavar="N",
        help="output tokens when a request gives none (default: %(default)s)",
    )
    srv.add_argument(
        "--max-format-bytes",
        type=int,
        default=256 * 1024,
        metavar="N",
        help="largest schema or grammar (default: %(default)s)",
    )
    srv.add_argument(
        "--max-body-bytes", type=int, default=8 * 2**20, metavar="N", help="largest request body (default: %(default)s)"
    )
    srv.add_argument(
        "--compile-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds one grammar may compile (default: %(default)s)",
    )
    srv.add_argument("--no-jump-forward", action="store_true", help="sample forced text token by token")
    srv.add_argument(
        "--speculative-k",
        type=int,
        default=0,
        metavar="N",
        help="draft N tokens by prompt lookup per step; 0 is off (default: 0)",
    )
    srv.add_argument(
        "--speculative-max-batch",
        type=int,
        default=4,
        metavar="N",
        help="draft only while at most N rows are decoded together (default: %(default)s)",
    )
    srv.add_argument("--log-level", default="warning", help="uvicorn's log level (default: %(default)s)")


def _serve(args: argparse.Namespace) -> None:
    for name in ("max_batch", "max_concurrent", "max_model_len", "max_tokens", "max_format_bytes", "max_body_bytes"):
        if getattr(args, name) < 1:
            raise _BadInput(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.speculative_k < 0:
        raise _BadInput(f"--speculative-k must be at least 0, got {args.speculative_k}")
    if not 0 <= args.port < 65536:
        raise _BadInput(f"--port must be 0 to 65535, got {args.port}")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise _BadInput("grammask serve needs FastAPI and uvicorn: pip install 'grammask[server]'") from None
    from grammask.generation.model import check_model_path
    from grammask.serving.app import ServerOptions, default_model_name, serve

    if args.model:
        check_model_path(args.model)
    if args.device != "cpu":
        _check_device(args.device)
    options = ServerOptions(
        model_name=args.served_model_name or default_model_name(args.model),
        api_key=args.api_key,
        max_concurrent=args.max_concurrent,
        max_batch=args.max_batch,
        max_model_len=args.max_model_len,
        default_max_tokens=args.max_tokens,
        max_format_bytes=args.max_format_bytes,
        max_body_bytes=args.max_body_bytes,
        compile_timeout_s=args.compile_timeout if args.compile_timeout > 0 else None,
        jump_forward=not args.no_jump_forward,
        speculative_k=args.speculative_k,
        speculative_max_batch=args.speculative_max_batch,
    )
    serve(
        options,
        model_path=args.model,
        host=args.host,
        port=args.port,
        dtype=args.dtype,
        device=args.device,
        log_level=args.log_level,
    )


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise _BadInput(f"cannot read {path}: {exc.strerror or exc}") from None


def _format(args: argparse.Namespace) -> tuple[Grammar | None, str]:
    """The grammar the arguments ask for and a hint for the prompt (how to answer)."""
    if args.lenient and not (args.json_schema or args.pydantic):
        raise _BadInput("--lenient applies only to --json-schema and --pydantic")
    if args.json_schema:
        text = _read(args.json_schema)
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _BadInput(
                f"{args.json_schema} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            ) from None
        grammar = Grammar.from_json_schema(schema, lenient=args.lenient)
        return grammar, f"Answer with JSON that follows this schema: {json.dumps(schema)}"
    if args.pydantic:
        module_name, _, class_name = args.pydantic.partition(":")
        if not module_name or not class_name:
            raise _BadInput(f"--pydantic takes MODULE:CLASS, got {args.pydantic!r}")
        sys.path.insert(0, ".")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise _BadInput(f"cannot load {args.pydantic}: {exc}") from None
        schema = json.dumps(cls.model_json_schema()) if hasattr(cls, "model_json_schema") else class_name
        return Grammar.from_pydantic(cls, lenient=args.lenient), f"Answer with JSON that follows this schema: {schema}"
    if args.regex is not None:
        return Grammar.from_regex(args.regex), f"Answer with text matching the regular expression {args.regex}"
    if args.grammar:
        suffix = Path(args.grammar).suffix.lower()
        if suffix not in (".gbnf", ".lark"):
            raise _BadInput(f"--grammar takes a .gbnf or .lark file, got {args.grammar}")
        text = _read(args.grammar)
        return (Grammar.from_ebnf(text) if suffix == ".gbnf" else Grammar.from_lark(text)), ""
    if args.choice:
        return Grammar.choice(args.choice), "Answer with exactly one of: " + ", ".join(args.choice)
    return None, ""


def _check_arguments(args: argparse.Namespace) -> None:
    """Checks that need neither the format nor the model."""
    if not args.prompt.strip():
        raise _BadInput("the prompt is empty: give the request as the first argument")
    if args.max_tokens < 1:
        raise _BadInput(f"--max-tokens must be at least 1, got {args.max_tokens}")
    if args.temperature < 0:
        raise _BadInput(f"--temperature must be at least 0, got {args.temperature}")
    if args.forbid_chars == "":
        raise _BadInput("--forbid-chars needs at least one character")


def _check_device(device: str) -> None:
    import torch

    try:
        kind = torch.device(device).type
    except RuntimeError as exc:
        raise _BadInput(f"--device {device}: {exc}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise _BadInput(f"--device {device}: torch {torch.__version__} sees no CUDA device")


class _Progress:
    """Says `what…` on stderr once a step has taken `PROGRESS_AFTER` seconds, then its time."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.shown = self.open = False
        self.timer = threading.Timer(PROGRESS_AFTER, self._show)

    def _show(self) -> None:
        with self.lock:
            print(f"{self.what}…", end="", file=sys.stderr, flush=True)
            self.shown = self.open = True

    def say(self, message: str) -> None:
        """One line on stderr, on a line of its own."""
        with self.lock:
            print(("\n" if self.open else "") + f"grammask: {message}", file=sys.stderr, flush=True)
            self.open = False

    def done(self) -> None:
        self.timer.cancel()
        with self.lock:
            if self.shown:
                took = f"{time.monotonic() - self.start:.1f}s"
                print(f" {took}" if self.open else f"{self.what}: {took}", file=sys.stderr, flush=True)


@contextmanager
def _progress(what: str) -> Iterator[_Progress]:
    progress = _Progress(what)
    progress.timer.start()
    try:
        yield progress
    finally:
        progress.done()


def _warn(message: str) -> None:
    print(f"grammask: warning: {message}", file=sys.stderr, flush=True)


def _generate(args: argparse.Namespace) -> None:
    _check_arguments(args)
    grammar, hint = _format(args)
    for dropped in grammar.warnings if grammar is not None else ():
        _warn(dropped)
    from grammask.generation.model import check_model_path

    if args.model:
        check_model_path(args.model)
    if args.device != "cpu":
        _check_device(args.device)

    from grammask.compiler import compile
    from grammask.generation import chat_prompt, generate
    from grammask.generation.formats import tokenizer_vocabulary
    from grammask.generation.loop import check_budget
    from grammask.generation.model import load_tokenizer, load_weights, model_width, prepare_model
    from grammask.processors import ForbidCharacters

    with _progress("preparing model") as progress:
        folder = prepare_model(args.model, announce=progress.say)
        tokenizer = load_tokenizer(folder)
        vocab = tokenizer_vocabulary(tokenizer, model_width(folder))
    processors = [ForbidCharacters(args.forbid_chars, vocab)] if args.forbid_chars else []
    compiled = None
    if grammar is not None:
        with _progress("compiling grammar"):
            compiled = compile(grammar, vocab)
            first = compiled.matcher().allowed_token_ids()  # the first mask is part of compiling
        check_budget(compiled, tokenizer, args.max_tokens)
        if processors and set(first.tolist()) <= set(processors[0].forbidden_token_ids.tolist()):
            raise _BadInput(f"--forbid-chars {args.forbid_chars!r} forbids every token the format allows first")
    with _progress("loading model"):
        model = load_weights(folder, device=args.device)
    request = f"{args.prompt}\n{hint}" if hint else args.prompt
    stream = generate(
        model,
        tokenizer,
        chat_prompt(tokenizer, request),
        compiled,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        seed=args.seed,
        stop=args.stop,
        stream=True,
        processors=processors,
    )
    try:
        for piece in stream:
            sys.stdout.write(piece)
            sys.stdout.flush()
    except GenerationError as exc:
        if processors and repr(processors[0]) in str(exc):
            raise _BadInput(f"--forbid-chars {args.forbid_chars!r} leaves the format no token to go on with") from None
        raise
    finally:
        sys.stdout.write("\n")
    result = stream.result
    if result is not None and result.tokens_short:
        _warn(
            f"the format was closed early to fit --max-tokens {args.max_tokens} (finish reason length): "
            f"the model's own answer needed at least {result.tokens_short} more tokens"
        )
    elif result is not None and result.finish_reason == "length":
        _warn(f"stopped at --max-tokens {args.max_tokens} (finish reason length): the output may be cut short")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 done, 1 generation failed, 2 bad input)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already reported on one line
        return int(exc.code or 0)
    try:
        (_serve if args.command == "serve" else _generate)(args)
    except (_BadInput, GrammaskError, ValueError, OSError) as exc:
        status = 1 if isinstance(exc, (GenerationError, OSError)) and not isinstance(exc, FileNotFoundError) else 2
        reason = " ".join(str(exc).split()).replace("pass lenient=True", "pass --lenient")
        print(f"grammask: error: {reason}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
