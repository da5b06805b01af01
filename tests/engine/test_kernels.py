"""The compiled kernels: warmed up once per process, with the argument types real masks pass."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _slice_depth_reference(start, limit, slice_table, table, expanded, max_pairs):
    """`kernels.slice_depth` written plainly, with a set of the pairs seen."""
    queue, seen, head, proven, missing = [(1, start, 0)], {(1, start)}, 0, limit + 1, []
    while head < len(queue):
        p, q, depth = queue[head]
        head += 1
        if depth >= limit:
            return min(proven, limit), missing
        if not expanded[q]:
            proven = min(proven, depth)
            missing += [q] if q not in missing else []
            continue
        for byte in range(256):
            p2, q2 = int(slice_table[p, byte]), int(table[q, byte])
            if not p2:
                continue
            if not q2:
                return min(proven, depth), missing
            if (p2, q2) not in seen:
                if len(queue) == max_pairs:
                    return min(proven, depth), missing
                seen.add((p2, q2))
                queue.append((p2, q2, depth + 1))
    return proven, missing


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.sampled_from([4, 16, 64, 2048]))
def test_slice_depth_equals_a_breadth_first_search_with_a_set(seed, limit, max_pairs):
    """The pairs the kernel has seen, kept by key in a table of its own, are exactly the set a
    plain search keeps: the same depth, the same rows found missing, on random tables where
    states collide in the table and a search runs out of pairs."""
    rng = np.random.default_rng(seed)
    slice_table = (rng.integers(0, 4, size=(4, 256)) * (rng.random((4, 256)) < 0.05)).astype(np.int32)
    slice_table[0] = 0
    n = int(rng.integers(2, 60))
    table = (rng.integers(1, n, size=(n, 256)) * (rng.random((n, 256)) < 0.998)).astype(np.uint16)
    table[0] = 0
    expanded = rng.random(n) < 0.9
    expanded[0] = True
    start = int(rng.integers(1, n))
    missing = np.empty(64, dtype=np.int64)
    depth, n_missing = kernels.slice_depth(start, limit, slice_table, table, expanded, max_pairs, missing)
    want_depth, want_missing = _slice_depth_reference(start, limit, slice_table, table, expanded, max_pairs)
    assert (depth, missing[:n_missing].tolist()) == (want_depth, want_missing[:64])
