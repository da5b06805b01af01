"""`python -m grammask.bench.generation`: end-to-end generation speed with the embedded model.

For every format of a fixed set (JSON Schemas, regexes, GBNF grammars), one untimed run that
computes the token masks of the parser states met (they are cached on the compiled grammar; its time
is kept as `cold_seconds`), then three timed greedy runs on the same prompt, interleaved so that load
on a shared machine hits them alike:

- constrained: the format's masks, jump-forward off (the cost of masking alone);
- unconstrained: no format, for as many tokens as the constrained run made (the baseline);
- jump-forward: the format with jump-forward on (forward passes saved);
- with `--speculative K`, a fourth: jump-forward plus prompt-lookup speculation drafting up to K
  tokens a step (acceptance rate, passes, and whether the tokens equal the jump-forward run's).

Every constrained output is checked (JSON Schema with `jsonschema`, the rest with the recognizer);
the report gives tokens per second side by side, their ratio, and the passes saved.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grammask import assets
from grammask.engine.recognize import accepts
from grammask.grammar import Grammar

__all__ = ["BenchFormat", "formats", "main", "run"]


@dataclass(frozen=True)
class BenchFormat:
    name: str
    request: str
    grammar: Grammar
    schema: dict | None = None  # JSON Schema to validate the output with, when there is one


def _schema(name: str, schema: dict, request: str) -> BenchFormat:
    return BenchFormat(
        name,
        f"{request} Answer in JSON following this schema: {json.dumps(schema)}",
        Grammar.from_json_schema(schema, whitespace=2),
        schema,
    )


_PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def formats() -> list[BenchFormat]:
    """The benchmark's formats (built on call: compiling them is part of no import)."""
    return [
        _schema("person", _PERSON, "My name is Alice and I am 30 years old."),
        _schema(
            "city",
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "country": {"type": "string"},
                    "population": {"type": "integer"},
                },
                "required": ["city", "country", "population"],
                "additionalProperties": False,
            },
            "Describe Paris.",
        ),
        _schema(
            "book",
            {
                "type": "object",
                "properties": {"title": {"type": "string"}, "author": {"type": "string"}, "year": {"type": "integer"}},
                "required": ["title", "author", "year"],
                "additionalProperties": False,
            },
            "Describe the book 1984.",
        ),
        _schema(
            "point",
            {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "Give a point in the plane.",
        ),
        _schema(
            "flags",
            {
                "type": "object",
                "properties": {"admin": {"type": "boolean"}, "active": {"type": "boolean"}},
                "required": ["admin", "active"],
                "additionalProperties": False,
            },
            "Describe a normal user.",
        ),
        _schema(
            "colors",
            {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 2, "maxItems": 3},
            "List two primary colors.",
        ),
        _schema(
            "numbers",
            {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 5},
            "List the first prime numbers.",
        ),
        _schema(
            "event",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "date": {"type": "string", "format": "date"}},
                "required": ["name", "date"],
                "additionalProperties": False,
            },
            "When was the Apollo 11 landing?",
        ),
        _schema(
            "status",
            {
                "type": "object",
                "properties": {"status": {"enum": ["ok", "error"]}, "code": {"type": "integer"}},
                "required": ["status", "code"],
                "additionalProperties": False,
            },
            "Report a successful HTTP request.",
        ),
        _schema(
            "nested",
            {
                "type": "object",
                "properties": {
                    "user": {
                        "type": "object",
                        "properties": {"id": {"type": "integer"}, "email": {"type": "string"}},
                        "required": ["id", "email"],
                        "additionalProperties": False,
                    }
                },
                "required": ["user"],
                "additionalProperties": False,
            },
            "Make up a user.",
        ),
        _schema(
            "tags",
            {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                },
                "required": ["title", "tags"],
                "additionalProperties": False,
            },
            "Tag a blog post about cooking pasta.",
        ),
        _schema(
            "optional",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "required": ["name", "nickname"],
                "additionalProperties": False,
            },
            "Describe Robert.",
        ),
        _schema(
            "product",
            {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
                    "price": {"type": "number", "minimum": 0},
                },
                "required": ["sku", "price"],
                "additionalProperties": False,
            },
            "Invent a product.",
        ),
        _schema(
            "weather",
            {
                "type": "object",
                "properties": {
                    "temperature": {"type": "number"},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "raining": {"type": "boolean"},
                },
                "required": ["temperature", "unit", "raining"],
                "additionalProperties": False,
            },
            "Describe a rainy day in London.",
        ),
        _schema(
            "pair",
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False, "minItems": 2},
            "Give a word and its length.",
        ),
        BenchFormat("yes-no", "Is the sky blue? Answer yes or no.", Grammar.from_regex("(yes|no)")),
        BenchFormat("phone", "Invent a US phone number.", Grammar.from_regex(r"\(\d{3}\) \d{3}-\d{4}")),
        BenchFormat("date", "When did World War II end?", Grammar.from_regex(r"\d{4}-\d{2}-\d{2}")),
        BenchFormat("choice", "What is the capital of France?", Grammar.choice(["Paris", "London", "Berlin"])),
        BenchFormat(
            "tool-call",
            "Get the info of user 7890, with special value 'black'.",
            Grammar.from_ebnf('root ::= "[get_user_info(user_id=" [0-9]+ ", special=\'" [a-z]+ "\')]"'),
        ),
        _gbnf("arithmetic.gbnf", "Write an arithmetic expression."),
        _gbnf("list.gbnf", "List three fruits."),
        # Outputs that repeat their own structure or copy the prompt: where prompt lookup pays.
        _schema(
            "people",
            {"type": "array", "items": _PERSON, "minItems": 1, "maxItems": 4},
            "List the people: Alice is 30, Bob is 41, Carol is 52 and Dave is 27.",
        ),
        BenchFormat(
            "quote",
            "Repeat this sentence exactly: The quick brown fox jumps over the lazy dog near the river bank.",
            Grammar.from_regex(r"[A-Za-z ,.]+"),
        ),
    ]


def _gbnf(name: str, request: str) -> BenchFormat:
    text = (assets.llama_cpp_vendor_dir() / "grammars" / name).read_text()
    return BenchFormat(name, request, Grammar.from_ebnf(text))


def _valid(fmt: BenchFormat, text: str) -> bool:
    if fmt.schema is None:
        return accepts(fmt.grammar, text.encode())
    import jsonschema  # type: ignore[import-untyped]

    try:
        jsonschema.validate(json.loads(text), fmt.schema, format_checker=jsonschema.FormatChecker())
    except (json.JSONDecodeError, jsonschema.ValidationError):
        return False
    return True


def run(
    formats: Sequence[BenchFormat], *, max_tokens: int = 48, model_path: str | None = None, speculative: int = 0
) -> dict:
    """Run the benchmark; returns per-format rows and totals (seconds, tokens, passes; with
    `speculative`, drafted and accepted tokens of the speculative run too)."""
    from grammask.compiler import compile
    from grammask.generation import chat_prompt, generate, load_model
    from grammask.generation.formats import logits_width, tokenizer_vocabulary

    model, tok = load_model(model_path)
    vocab = tokenizer_vocabulary(tok, logits_width(model))
    generate(model, tok, chat_prompt(tok, "Hello"), max_tokens=4)  # warm up
    rows = []
    for fmt in formats:
        compiled = compile(fmt.grammar, vocab)
        prompt = chat_prompt(tok, fmt.request)
        row: dict[str, Any] = {"name": fmt.name}
        start = time.perf_counter()  # the first run computes the masks of new parser states
        generate(model, tok, prompt, compiled, max_tokens=max_tokens)
        row["cold_seconds"] = time.perf_counter() - start
        # The free run gets the masked run's token count, so both pay the same prompt pass for as
        # many tokens: the difference is the cost of the masks.
        runs = [("masked", compiled, False, 0), ("free", None, True, 0), ("jump", compiled, True, 0)]
        runs += [("spec", compiled, True, speculative)] if speculative else []
        budget = max_tokens
        ids: dict[str, list[int]] = {}
        for label, grammar, jump, k in runs:
            start = time.perf_counter()
            result = generate(model, tok, prompt, grammar, max_tokens=budget, jump_forward=jump, speculative=k)
            row[label] = {
                "seconds": time.perf_counter() - start,
                "tokens": len(result.token_ids),
                "passes": result.forward_passes,
                "saved": result.passes_saved,
                "drafted": result.drafted,
                "accepted": result.accepted,
            }
            if grammar is not None:
                row[label]["valid"] = _valid(fmt, result.text)
                row["text"] = result.text
            ids[label] = result.token_ids
            budget = max_tokens if label == "free" else len(result.token_ids)
        if speculative:
            row["spec"]["same"] = ids["spec"] == ids["jump"]
        rows.append(row)
    labels = [label for label, *_ in runs]
    keys = ("seconds", "tokens", "passes", "saved", "drafted", "accepted")
    totals = {label: {k: sum(r[label][k] for r in rows) for k in keys} for label in labels}
    return {"rows": rows, "totals": totals, "speculative": speculative}


def _report(out: dict) -> str:
    t = out["totals"]
    speed = {k: v["tokens"] / v["seconds"] for k, v in t.items()}
    valid = sum(r["masked"]["valid"] and r["jump"]["valid"] for r in out["rows"])
    lines = [
        "| format | free tok/s | masked tok/s | jump-forward tok/s | passes (masked → jump) | valid |",
        "|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        cells = [f"{r[k]['tokens'] / r[k]['seconds']:.1f}" for k in ("free", "masked", "jump")]
        ok = "yes" if r["masked"]["valid"] and r["jump"]["valid"] else "NO"
        lines.append(f"| {r['name']} | {' | '.join(cells)} | {r['masked']['passes']} → {r['jump']['passes']} | {ok} |")
    lines += [
        "",
        f"Totals: free {speed['free']:.2f} tok/s, masked {speed['masked']:.2f} tok/s "
        f"({speed['masked'] / speed['free']:.1%} of free), jump-forward {speed['jump']:.2f} tok/s "
        f"({speed['jump'] / speed['free']:.1%} of free).",
        f"Forward passes: masked {t['masked']['passes']}, jump-forward {t['jump']['passes']} "
        f"({t['jump']['saved']} saved for {t['jump']['tokens']} tokens). Valid outputs: {valid}/{len(out['rows'])}.",
    ]
    if out.get("speculative"):
        lines += ["", *_speculation_report(out)]
    return "\n".join(lines)


def _speculation_report(out: dict) -> list[str]:
    """The jump-forward run against the same run with speculation."""
    t = out["totals"]
    lines = [
        f"Speculation (prompt lookup, up to {out['speculative']} drafted tokens a step), beside jump-forward alone:",
        "",
        "| format | jump-forward tok/s | speculative tok/s | passes (jump → spec) | drafted | accepted | same tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        j, s = r["jump"], r["spec"]
        lines.append(
            f"| {r['name']} | {j['tokens'] / j['seconds']:.1f} | {s['tokens'] / s['seconds']:.1f} | "
            f"{j['passes']} → {s['passes']} | {s['drafted']} | {s['accepted']} | {'yes' if s['same'] else 'NO'} |"
        )
    j, s = t["jump"], t["spec"]
    same = sum(r["spec"]["same"] for r in out["rows"])
    rate = s["accepted"] / s["drafted"] if s["drafted"] else 0.0
    lines += [
        "",
        f"Totals: jump-forward {j['tokens'] / j['seconds']:.2f} tok/s, speculative {s['tokens'] / s['seconds']:.2f} "
        f"tok/s (x{(s['tokens'] / s['seconds']) / (j['tokens'] / j['seconds']):.2f}); forward passes "
        f"{j['passes']} → {s['passes']}; drafted {s['drafted']}, accepted {s['accepted']} ({rate:.1%}); "
        f"same tokens {same}/{len(out['rows'])}.",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grammask.bench.generation", description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--model", help="GGUF file or model directory (default: embedded SmolLM2)")
    parser.add_argument("--only", help="run only the formats whose name matches this regex")
    parser.add_argument("--json", help="also write the raw numbers to this file")
    parser.add_argument(
        "--speculative", type=int, default=0, metavar="K", help="also run with up to K drafted tokens a step"
    )
    args = parser.parse_args(argv)
    chosen = [f for f in formats() if not args.only or re.search(args.only, f.name)]
    out = run(chosen, max_tokens=args.max_tokens, model_path=args.model, speculative=args.speculative)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    print(_report(out))
    # Speculation changing a token is reported, not failed: bfloat16 logits can tie (docs/generation.md).
    labels = ("masked", "jump", "spec") if args.speculative else ("masked", "jump")
    return 0 if all(r[label]["valid"] for r in out["rows"] for label in labels) else 1


if __name__ == "__main__":
    sys.exit(main())
