"""Every engine adapter over the real Llama 3 vocabulary: exact first masks, EOS handling, special
tokens, and format errors surfacing as `CompileError`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import regex

from grammask.bench.engines import CompileError, Engine, EngineUnavailable, load_engine
from grammask.bitmask import unpack_bitmask
from grammask.vocab.vocabulary import Vocabulary

WORDS = r"[a-z]+( [a-z]+)*"


def _mask(engine: Engine, fmt: str, source: object, vocab: Vocabulary, tokens: Sequence[int] = ()) -> np.ndarray:
    session = engine.compile(fmt, source).session()
    for token in tokens:
        assert session.advance(token)
    bitmask = np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32)
    session.fill(bitmask)
    return unpack_bitmask(bitmask[0], vocab.size)


def _expected_words_prefix(vocab: Vocabulary) -> np.ndarray:
    """Tokens that can start a text of WORDS: lowercase words split by single spaces."""
    prefix = regex.compile(r"[a-z]+( [a-z]+)* ?")
    return np.array(
        [
            not vocab.is_special[t] and prefix.fullmatch(text.decode("latin-1")) is not None
            for t, text in enumerate(vocab.token_bytes)
        ]
    )


def test_first_mask_is_exact(engine: Engine, llama3: Vocabulary) -> None:
    allowed = _mask(engine, "regex", WORDS, llama3)
    expected = _expected_words_prefix(llama3)
    assert expected.sum() > 1000
    assert np.array_equal(allowed, expected)


def test_eos_allowed_exactly_when_complete(engine: Engine, llama3: Vocabulary, tokenizer) -> None:
    eos = list(llama3.eos_ids)
    complete = _mask(engine, "regex", WORDS, llama3, tokenizer.encode("hello world"))
    assert complete[eos].all()
    open_ended = _mask(engine, "regex", WORDS, llama3, tokenizer.encode("hello "))
    assert not open_ended[eos].any()
    others = np.flatnonzero(llama3.is_special)
    assert not open_ended[others].any()


def test_rejected_token_returns_false(engine: Engine, tokenizer) -> None:
    session = engine.compile("regex", WORDS).session()
    assert not session.advance(tokenizer.encode("Hello")[0])


def test_json_schema_first_mask_forces_an_object(engine: Engine, llama3: Vocabulary) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    allowed = np.flatnonzero(_mask(engine, "json_schema", schema, llama3))
    assert len(allowed) > 0
    assert all(llama3.token_bytes[t].lstrip().startswith(b"{") for t in allowed)


def test_gbnf_grammar_compiles(engine: Engine, llama3: Vocabulary, tokenizer) -> None:
    grammar = 'root ::= "yes" | "no" | ws "maybe"\nws ::= | " "\n'
    allowed = np.flatnonzero(_mask(engine, "gbnf", grammar, llama3))
    assert set(tokenizer.encode("yes") + tokenizer.encode(" maybe")) <= set(allowed.tolist())
    assert tokenizer.encode(" yes")[0] not in allowed


@pytest.mark.parametrize(("fmt", "source"), [("regex", "(ab"), ("gbnf", "root ::= (")])
def test_malformed_format_is_a_compile_error(engine: Engine, fmt: str, source: str) -> None:
    with pytest.raises(CompileError):
        engine.compile(fmt, source)


def test_unknown_format_and_engine_are_refused(engine: Engine, llama3: Vocabulary) -> None:
    with pytest.raises(ValueError, match="lark"):
        engine.compile("lark", "start: 'a'")
    with pytest.raises(ValueError, match="outlines"):
        load_engine("outlines", llama3)
    with pytest.raises(ValueError, match="encode"):
        load_engine("llguidance", llama3)


def test_missing_peer_is_unavailable(llama3: Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    # A peer that cannot be found on the import path (as when it is not installed).
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(EngineUnavailable, match="pip install xgrammar"):
        load_engine("xgrammar", llama3)
