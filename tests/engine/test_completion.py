"""`Matcher.shortest_completion`: the fewest bytes that complete a format, checked against brute force."""

import itertools

import pytest

from grammask.compiler import compile
from grammask.engine.recognize import accepts
from grammask.grammar import Grammar

CASES = [
    (Grammar.from_regex(r"(ab|c)+d{2}"), [b"", b"a", b"ab", b"abc", b"cd"]),
    (Grammar.from_regex(r"[a-c]{2,4}x|y"), [b"", b"a", b"ab", b"abc"]),
    (Grammar.from_ebnf('root ::= "(" root ")" | "x"'), [b"", b"(", b"((", b"(((x"]),
]


def _brute_force(grammar, prefix: bytes, alphabet: bytes, limit: int) -> int:
    for n in range(limit + 1):
        for tail in itertools.product(alphabet, repeat=n):
            if accepts(grammar, prefix + bytes(tail)):
                return n
    raise AssertionError("no completion within the limit")


@pytest.mark.parametrize("grammar,prefixes", CASES, ids=["regex-plus", "regex-bounded", "nested"])
def test_completion_is_valid_and_shortest(vocab_gpt2, grammar, prefixes):
    compiled = compile(grammar, vocab_gpt2)
    for prefix in prefixes:
        matcher = compiled.matcher()
        assert matcher.advance_bytes(prefix) or not prefix
        completion = matcher.shortest_completion()
        assert completion is not None and accepts(grammar, prefix + completion)
        assert len(completion) == _brute_force(grammar, prefix, b"abcdxy()", len(completion))


def test_json_schema_completion(vocab_gpt2):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 2}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    grammar = Grammar.from_json_schema(schema, whitespace="compact")
    matcher = compile(grammar, vocab_gpt2).matcher()
    assert matcher.advance_bytes(b'{"name":"A')
    completion = matcher.shortest_completion()
    assert len(completion) == len(b'x","age":0}') and accepts(grammar, b'{"name":"A' + completion)


def test_complete_text_needs_nothing(vocab_gpt2):
    matcher = compile(Grammar.from_regex("ab?"), vocab_gpt2).matcher()
    matcher.advance_bytes(b"a")
    assert matcher.shortest_completion() == b""
