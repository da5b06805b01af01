"""`grammask.compile` and `CompiledGrammar`: what a dropped grammar leaves behind."""

import gc
import sys
from collections import OrderedDict

import numpy as np

import grammask
from grammask import Grammar, compiler
from grammask.compiler import CompiledGrammar
from grammask.ir import regex as rx

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
    "additionalProperties": {"type": "integer"},
}


def _cyclic_garbage(make) -> int:
    """Objects the cyclic collector finds unreachable after `make()` runs and its result is dropped."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        make()
        return gc.collect()
    finally:
        if enabled:
            gc.enable()


def _decode(compiled: CompiledGrammar, text: bytes) -> None:
    """Fill a mask and advance by each piece of `text` as a tokenizer might cut it: `{`, `"`,
    two bytes, then the rest (masks at fresh states and splits inside a key)."""
    matcher = compiled.matcher()
    bitmask = np.zeros((1, (compiled.vocab.size + 31) // 32), dtype=np.int32)
    for data in (text[:1], text[1:2], text[2:4], text[4:]):
        matcher.fill_bitmask(bitmask)
        assert matcher.advance_bytes(data)


def test_a_dropped_grammar_is_freed_by_reference_counting(vocab_llama3):
    """No reference cycle in a compiled grammar: one evicted from the compile cache is freed at
    once, not by a full collection that would stall a decoding step."""

    def use() -> None:
        _decode(CompiledGrammar(Grammar.from_json_schema(SCHEMA), vocab_llama3), b'{"tags": ["a"], "x": 1')

    use()  # the front-end's memos and the lexeme cache are warm from here on
    assert _cyclic_garbage(use) == 0


def test_the_json_schema_front_end_leaves_no_cycles():
    """Its recursive rule builders (objects, arrays, uniqueItems, contains) once left every
    expression they captured as cyclic garbage: a schema's IR, freed only by a full collection."""
    schema = {
        **SCHEMA,
        "properties": {
            **SCHEMA["properties"],
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"const": 1.0}], "maxItems": 3},
            "set": {"type": "array", "items": {"enum": ["x", "y", 2]}, "uniqueItems": True},
            "some": {"type": "array", "contains": {"type": "integer"}, "maxContains": 2},
        },
    }
    assert _cyclic_garbage(lambda: Grammar.from_json_schema(schema)) == 0


def test_an_nfa_build_leaves_no_cycles():
    from grammask.automata.compile import compile_regex

    node = rx.concat(rx.literal("id-"), rx.repeat(rx.alt(rx.literal("ab"), rx.char_class([(0x3B1, 0x3C9)])), 2, 40))
    # Before: the whole NFA (a list per state) was cyclic garbage, and so was each UTF-8 byte
    # template's recursive closure.
    assert _cyclic_garbage(lambda: compile_regex(node)) == 0


def test_the_compile_cache_keeps_no_ir(vocab_llama3):
    """The cache is keyed by the schema's pickle (or a grammar's canonical text): a cached
    grammar's IR, tens of thousands of small objects for a large schema, is not kept for every full
    collection to scan."""
    grammar = Grammar.from_json_schema({**SCHEMA, "required": ["name"]})
    bodies = list(grammar.rules.values())
    before = [sys.getrefcount(body) for body in bodies]
    compiled = grammask.compile(grammar, vocab_llama3)
    assert [sys.getrefcount(body) for body in bodies] == before
    assert grammask.compile(Grammar.from_json_schema({**SCHEMA, "required": ["name"]}), vocab_llama3) is compiled
    assert grammask.compile(Grammar.from_json_schema({**SCHEMA, "required": ["tags"]}), vocab_llama3) is not compiled


def test_a_constructed_grammar_is_cached_by_its_arguments(vocab_llama3):
    """A constructor's grammar is known by its arguments, one untracked bytes object: equal ones
    share a compile, and arguments that differ only in property order (which orders the members)
    or in an option do not."""
    grammar = Grammar.from_json_schema(SCHEMA)
    assert isinstance(grammar.cache_key(), bytes) and not gc.is_tracked(grammar.cache_key())
    compiled = grammask.compile(grammar, vocab_llama3)
    assert grammask.compile(Grammar.from_json_schema(dict(SCHEMA)), vocab_llama3) is compiled
    swapped = {**SCHEMA, "properties": dict(reversed(SCHEMA["properties"].items()))}
    assert grammask.compile(Grammar.from_json_schema(swapped), vocab_llama3) is not compiled
    assert grammask.compile(Grammar.from_json_schema(SCHEMA, strict=True), vocab_llama3) is not compiled
    assert Grammar.from_regex("a+").cache_key() != Grammar.from_lark("start: /a+/").cache_key()


def test_a_grammar_changed_after_construction_is_cached_by_its_rules(vocab_llama3):
    """Rules replaced after a constructor made the grammar: its arguments no longer describe it,
    so the key is its canonical text, and the compile is the new grammar's."""
    grammar = Grammar.from_regex("[a-z]+")
    before = grammask.compile(grammar, vocab_llama3)
    grammar.rules[grammar.start] = Grammar.from_regex("[0-9]+").rules["root"]
    assert grammar.cache_key() == grammar.canonical()
    after = grammask.compile(grammar, vocab_llama3)
    assert after is not before
    assert after.matcher().accept_string("42") and not after.matcher().accept_string("ab")


def test_cache_keys_earley_items_and_grammar_tables_are_untracked(vocab_llama3):
    """Cache keys, Earley items, config keys and the grammar's tables are tuples of numbers (sets
    and configs named by number): the collector stops tracking them, so a grammar's thousands of
    entries cost full collections nothing. The configs of one scan of the same set share one
    tuple of sets."""
    # Any value for other keys: a recursive grammar, so the object is parsed, not one lexeme.
    compiled = CompiledGrammar(Grammar.from_json_schema({**SCHEMA, "additionalProperties": {}}), vocab_llama3)
    _decode(compiled, b'{"tags": ["a", "b"], "x": [1], "y": {"z": 2}')
    matcher = compiled.matcher()  # a long string, three bytes a step: a config per lexer state
    for i in range(0, 60, 3):
        assert matcher.advance_bytes(b'{"name": "one two three four five six seven eight nine ten", '[i : i + 3])
    gc.collect()
    gc.collect()  # a tuple is untracked once its items are: an outer key may need a second pass
    keys = list(compiled.cache._data)
    assert len(keys) > 20
    assert not [key for key in keys if gc.is_tracked(key)]
    sets = [s for table in compiled.parser._sets for s in table.values()]
    assert len(sets) > 5
    assert not [item for s in sets for item in s.items if gc.is_tracked(item)]
    parser = compiled.parser
    configs = [c for table in parser._configs for c in table.values()]
    assert len(configs) >= 8
    assert not [key for table in parser._configs for key in table if gc.is_tracked(key)]
    assert not [c.states for c in configs if gc.is_tracked(c.states)]
    tables = (parser.lhs, parser.rhs, parser.by_lhs, parser.nullable, parser.is_lexeme, parser.token_ids)
    assert not [table for table in tables if gc.is_tracked(table)]
    alone = {}
    for config in configs:
        if len(config.sets) == 1:
            assert alone.setdefault(config.sets[0].number, config.sets) is config.sets
    assert len(alone) < sum(len(c.sets) == 1 for c in configs)


def _mask_after(compiled: CompiledGrammar, text: bytes) -> np.ndarray:
    matcher = compiled.matcher()
    assert matcher.advance_bytes(text)
    bitmask = np.zeros((1, (compiled.vocab.size + 31) // 32), dtype=np.int32)
    matcher.fill_bitmask(bitmask)
    return bitmask


def test_idle_grammars_past_the_warm_ones_drop_what_they_learned(vocab_llama3, monkeypatch):
    """`compile` cools the cached grammars that no matcher uses and that are not among the
    `max_warm_grammars` most recent: their caches and shared parser states go (what a full
    collection would scan), a grammar in use keeps them, and a cooled grammar's masks are the same."""
    monkeypatch.setattr(compiler, "_cache", OrderedDict())

    def schema(i: int) -> dict:
        return {**SCHEMA, "required": [f"p{i}"], "properties": {**SCHEMA["properties"], f"p{i}": {"type": "string"}}}

    few = [grammask.compile(Grammar.from_json_schema(schema(i)), vocab_llama3) for i in range(10, 13)]
    assert all(g.cache_stats().entries for g in few)  # fewer than the default four: all warm
    limits = grammask.Limits(max_warm_grammars=2)
    busy = grammask.compile(Grammar.from_json_schema(schema(0)), vocab_llama3, limits=limits)
    in_use = busy.matcher()
    first = grammask.compile(Grammar.from_json_schema(schema(1)), vocab_llama3, limits=limits)
    text = b'{"name": "x", "tags": ["a", "b'
    before = _mask_after(first, text)
    assert first.cache_stats().entries and first.parser.nbytes
    grammask.compile(Grammar.from_json_schema(schema(2)), vocab_llama3, limits=limits)
    assert first.cache_stats().entries  # still one of the two most recent
    grammask.compile(Grammar.from_json_schema(schema(3)), vocab_llama3, limits=limits)
    assert first.cache_stats().entries == 0 and first.parser.nbytes == 0
    assert busy.cache_stats().entries and busy.parser.nbytes  # a matcher still uses it
    assert in_use.advance_bytes(b'{"p0": "')
    cold = first.nbytes
    assert np.array_equal(_mask_after(first, text), before)
    assert first.nbytes > cold  # used again: measured again, not taken from when it cooled


def test_the_compile_cache_counts_the_lexeme_automata_its_grammars_keep(vocab_llama3, monkeypatch):
    """A grammar keeps its lexemes' DFAs alive after the process's DFA cache lets them go, so the
    compile cache's budget counts them: 47 grammars of large schemas once held 1.1 GB of them
    where the cache counted 25 MB."""
    monkeypatch.setattr(compiler, "_cache", OrderedDict())
    limits = grammask.Limits(max_compile_cache_bytes=4 * 2**20)
    for i in range(4):
        compiled = grammask.compile(Grammar.from_regex(f"{i}[a-z]{{1,1500}}"), vocab_llama3, limits=limits)
        dfa = compiled.parser.dfa(0)  # the one lexeme: about 1,500 states of 1 KiB
        assert compiled.nbytes > compiled.parser.lexer.nbytes + dfa.transitions.nbytes > 3 * 2**20 // 2
    assert sum(c.nbytes for c in compiler._cache.values()) <= limits.max_compile_cache_bytes
    assert len(compiler._cache) < 4
