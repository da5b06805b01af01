"""The compiled kernels: warmed up once per process, with the argument types real masks pass."""

import numpy as np
import pytest

import grammask
from grammask import jit
from grammask.automata.compile import compile_regex
from grammask.engine import kernels
from grammask.engine.tables import tables_for
from grammask.frontends.regex_syntax import parse_regex

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")


def test_warm_up_covers_every_call_masks_make(vocab_llama3):
    """A compile that joins lexemes, and masks that run every kernel (a free string's slice probe,
    trie walks, steps across lexeme boundaries), add no specialisation to what `warm_up` compiled:
    a new one would be compiled, or loaded from numba's cache, inside a decoding step (half a
    second on a fresh machine)."""
    tables_for(vocab_llama3)  # warms the kernels up
    warmed = {name: len(function.signatures) for name, function in jit.jitted.items()}
    assert set(warmed) == {
        "walk_trie",
        "cross_tokens",
        "tokens_below",
        "slice_depth",
        "set_bits",
        "lay_block",
        "concat",
    }
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "tags": {"type": "array"}}}
    compiled = grammask.compile(grammask.Grammar.from_json_schema(schema), vocab_llama3)
    matcher = compiled.matcher()
    bitmask = grammask.allocate_bitmask(1, vocab_llama3.size)
    data, position = b'{"name": "Alice", "tags": [1, "x"]}', 0
    while position < len(data):  # longest tokens: every kernel runs on the way
        matcher.fill_bitmask(bitmask)
        token, length = compiled.masks.longest_token_at(data, position)
        assert matcher.advance(token)
        position += length
    matcher.fill_bitmask(bitmask)
    assert matcher.can_finish()
    assert {name: len(function.signatures) for name, function in jit.jitted.items()} == warmed


def test_lay_block_shifts_live_targets_and_keeps_the_dead_state():
    """A lexeme's block is its DFA's rows from state 1 on, every live target moved by the base:
    what the three numpy passes of the fallback write, and nothing outside the block."""
    source = compile_regex(parse_regex(r'"[a-z]{2,5}(-[0-9]+)?"')).transitions
    base = 7
    table = np.full((base + len(source) + 3, 256), -1, dtype=np.int32)
    kernels.lay_block(table, base, source)
    want = np.where(source[1:] != 0, source[1:] + base, 0)
    assert np.array_equal(table[base + 1 : base + len(source)], want)
    assert (table[: base + 1] == -1).all() and (table[base + len(source) :] == -1).all()
