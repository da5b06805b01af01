"""The `grammask` command: `grammask generate "PROMPT" --json-schema person.json` and friends.

The format is read and checked before the model loads, so bad input fails at once: every error is
one line on stderr and exit status 2 (1 if generation itself fails). Output streams to stdout.
Steps that take more than a second (loading the model, compiling the grammar) say so on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grammask.errors import GenerationError, GrammaskError
from grammask.ir.grammar import Grammar

__all__ = ["main"]

#: Seconds a step may take before the command says what it is doing.
PROGRESS_AFTER = 1.0


class _BadInput(Exception):
    """An argument that cannot be used; the message is the one line the user sees."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error reported on one line like every other error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"grammask: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="grammask", description="Constrained text generation.")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="generate text that follows a format",
                              description="Generate text that follows a format, streamed to stdout.")
    gen.add_argument("prompt", help="the request, sent to the model as a chat message")
    fmt = gen.add_mutually_exclusive_group()
    fmt.add_argument("--json-schema", metavar="FILE", help="JSON Schema file the output must satisfy")
    fmt.add_argument("--pydantic", metavar="MODULE:CLASS", help="pydantic model the output must satisfy")
    fmt.add_argument("--regex", metavar="RE", help="regular expression the whole output must match")
    fmt.add_argument("--grammar", metavar="FILE", help="GBNF (.gbnf) or Lark (.lark) grammar file")
    fmt.add_argument("--choice", nargs="+", metavar="TEXT", help="the output is exactly one of these")
    gen.add_argument("--forbid-chars", metavar="CHARS", help="never output any of these characters")
    gen.add_argument("--model", metavar="PATH", help="GGUF file or transformers model directory "
                     "(default: the embedded SmolLM2-135M-Instruct)")
    gen.add_argument("--max-tokens", type=int, default=256, metavar="N")
    gen.add_argument("--temperature", type=float, default=0.0, metavar="T", help="0 (default) is greedy")
    gen.add_argument("--seed", type=int, metavar="S")
    gen.add_argument("--stop", action="append", default=[], metavar="TEXT", help="stop before this text")
    return parser


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise _BadInput(f"cannot read {path}: {exc.strerror or exc}") from None


def _format(args: argparse.Namespace) -> tuple[Grammar | None, str]:
    """The grammar the arguments ask for and a hint for the prompt (how to answer)."""
    if args.json_schema:
        text = _read(args.json_schema)
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _BadInput(f"{args.json_schema} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
        return Grammar.from_json_schema(schema), f"Answer with JSON that follows this schema: {json.dumps(schema)}"
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
        return Grammar.from_pydantic(cls), f"Answer with JSON that follows this schema: {schema}"
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


@contextmanager
def _progress(what: str) -> Iterator[None]:
    """Say `what…` on stderr if the block takes more than `PROGRESS_AFTER` seconds, then its time."""
    start = time.monotonic()
    timer = threading.Timer(PROGRESS_AFTER, lambda: print(f"{what}…", end="", file=sys.stderr, flush=True))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if time.monotonic() - start > PROGRESS_AFTER:
            print(f" {time.monotonic() - start:.1f}s", file=sys.stderr, flush=True)


def _generate(args: argparse.Namespace) -> None:
    if args.max_tokens < 1:
        raise _BadInput(f"--max-tokens must be at least 1, got {args.max_tokens}")
    if args.temperature < 0:
        raise _BadInput(f"--temperature must be at least 0, got {args.temperature}")
    if args.forbid_chars == "":
        raise _BadInput("--forbid-chars needs at least one character")
    if args.model and not Path(args.model).exists():
        raise _BadInput(f"no model at {args.model}")
    grammar, hint = _format(args)

    from grammask.compiler import compile
    from grammask.generation import chat_prompt, generate, load_model
    from grammask.generation.formats import logits_width, tokenizer_vocabulary
    from grammask.processors import ForbidCharacters

    with _progress("loading model"):
        model, tokenizer = load_model(args.model)
    vocab = tokenizer_vocabulary(tokenizer, logits_width(model))
    compiled = None
    if grammar is not None:
        with _progress("compiling grammar"):
            compiled = compile(grammar, vocab)
            compiled.matcher().allowed_token_ids()  # the first mask is part of compiling
    processors: list[Any] = [ForbidCharacters(args.forbid_chars, vocab)] if args.forbid_chars else []
    request = f"{args.prompt}\n{hint}" if hint else args.prompt
    stream = generate(model, tokenizer, chat_prompt(tokenizer, request), compiled, max_tokens=args.max_tokens,
                      temperature=args.temperature, seed=args.seed, stop=args.stop, stream=True,
                      processors=processors)
    for piece in stream:
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 generation failed, 2 bad input)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already reported on one line
        return int(exc.code or 0)
    try:
        _generate(args)
    except (_BadInput, GrammaskError, ValueError) as exc:
        status = 1 if isinstance(exc, GenerationError) else 2
        reason = " ".join(str(exc).split())
        print(f"grammask: error: {reason}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
