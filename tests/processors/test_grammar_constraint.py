"""GrammarConstraint: per-row matchers driven by the sequences, on the real Llama 3 vocabulary."""

import re

import numpy as np
import pytest

from grammask.compiler import compile
from grammask.errors import GenerationError
from grammask.ir import regex as rx
from grammask.ir.grammar import Grammar, alt, lex, literal
from grammask.processors import ForbidCharacters, GenerationContext, GrammarConstraint, Pipeline
from grammask.vocab.vocabulary import Vocabulary


@pytest.fixture(scope="module")
def digits(vocab_llama3):
    return compile(Grammar({"root": lex(rx.repeat(rx.char_class([(48, 57)]), 3, 3))}), vocab_llama3)


@pytest.fixture(scope="module")
def greeting(vocab_llama3):
    return compile(Grammar({"root": alt(literal("hello"), literal("world"))}), vocab_llama3)


def decode(xp, constraint, logits_per_step: np.ndarray, prompt: np.ndarray, steps: int) -> np.ndarray:
    """Greedy decoding with the constraint alone; returns the generated ids."""
    state = constraint.init(prompt.shape[0])
    sequences = prompt
    for step in range(steps):
        ctx = GenerationContext(xp(sequences), prompt.shape[1], sequences.shape[1])
        masked, state = constraint.process(xp(logits_per_step[step]), state, ctx)
        chosen = xp.host(masked).argmax(axis=1)
        sequences = np.concatenate([sequences, chosen[:, None]], axis=1)
    return sequences[:, prompt.shape[1] :]


def test_rows_follow_their_own_grammar(xp, vocab_llama3, digits, greeting):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((7, 3, vocab_llama3.size)).astype(np.float32)
    prompt = np.array([[vocab_llama3.bos_id]] * 3)
    out = decode(xp, GrammarConstraint([digits, None, greeting]), logits, prompt, steps=7)
    eos = set(vocab_llama3.eos_ids)

    def text(row):
        ids = out[row].tolist()
        end = next(i for i, t in enumerate(ids) if t in eos)
        assert all(t in eos for t in ids[end:]), "a finished row only gets end-of-sequence tokens"
        return b"".join(vocab_llama3.token_bytes[t] for t in ids[:end]).decode()

    assert re.fullmatch(r"[0-9]{3}", text(0))
    assert text(2) in ("hello", "world")
    assert np.array_equal(out[1], logits[:, 1].argmax(axis=1)), "an unconstrained row is left alone"


def test_one_grammar_serves_every_row(xp, vocab_llama3, digits):
    prompt = np.array([[1, 2], [3, 4]])
    logits = np.random.default_rng(1).standard_normal((4, 2, vocab_llama3.size)).astype(np.float32)
    out = decode(xp, GrammarConstraint(digits), logits, prompt, steps=4)
    for row in out:
        assert row[-1] in vocab_llama3.eos_ids


def test_a_token_outside_the_grammar_is_reported(vocab_llama3, digits):
    constraint = GrammarConstraint([None, digits])
    state = constraint.init(2)
    logits = np.zeros((2, vocab_llama3.size), dtype=np.float32)
    constraint.process(logits, state, GenerationContext.start(np.array([[5], [5]])))
    bad = vocab_llama3.token_id("abc")
    with pytest.raises(GenerationError, match=rf"row 1: token {bad} at position 1 is not allowed by GrammarConstraint"):
        constraint.process(logits, state, GenerationContext(np.array([[5, bad], [5, bad]]), 1, 2))


def test_an_unspellable_grammar_is_reported():
    vocab = Vocabulary([b"a", b"b", b"</s>"], special_ids=[2], eos_ids=[2])
    constraint = GrammarConstraint(compile(Grammar({"root": literal("c")}), vocab))
    with pytest.raises(GenerationError, match=r"row 0: GrammarConstraint\('root'\) allows no token at position 0"):
        ctx = GenerationContext.start(np.zeros((1, 0), dtype=np.int64))
        constraint.process(np.zeros((1, 3), np.float32), constraint.init(1), ctx)


def test_batch_size_must_match_per_row_grammars(digits):
    with pytest.raises(ValueError, match="has 2 rows of grammars but the batch has 3"):
        GrammarConstraint([digits, None]).init(3)


def test_grammars_must_share_a_vocabulary_size(digits):
    small = compile(Grammar({"root": literal("a")}), Vocabulary([b"a", b"</s>"], eos_ids=[1]))
    with pytest.raises(ValueError, match="share a vocabulary size"):
        GrammarConstraint([digits, small])


def test_pipeline_names_the_processor_that_emptied_a_row(vocab_llama3):
    hello = compile(Grammar({"root": literal("hello")}), vocab_llama3)
    pipeline = Pipeline([GrammarConstraint(hello), ForbidCharacters("e", vocab_llama3)])
    state = pipeline.init(1)
    logits = np.zeros((1, vocab_llama3.size), dtype=np.float32)
    first, state = pipeline.greedy(logits, state, GenerationContext.start(np.array([[7]])))
    assert vocab_llama3.token_bytes[int(first[0])] == b"h"
    with pytest.raises(GenerationError, match=r"row 0: every token is masked .* removed by ForbidCharacters\('e'\)"):
        pipeline.greedy(logits, state, GenerationContext(np.array([[7, int(first[0])]]), 1, 2))
