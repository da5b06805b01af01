"""Token masks against a brute-force oracle on real vocabularies.

The oracle checks every token one by one: token t is allowed after text s exactly when s + bytes(t)
is a prefix of some sentence (the byte-level parser, stepping a byte at a time), special tokens only
where the grammar names them, and end-of-sequence tokens exactly when s is a sentence.
"""

import dataclasses
import random
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grammask
from grammask import assets
from grammask.bitmask import unpack_bitmask
from grammask.compiler import CompiledGrammar
from grammask.engine import kernels
from grammask.engine import lexer as lexer_module
from grammask.engine import masks as masks_module
from grammask.engine.tables import TrieIndex
from grammask.grammar import Grammar
from grammask.ir import regex as rx
from grammask.ir.grammar import alt, lex, literal, opt, ref, seq, star, token

VOCABS = ["vocab_llama3", "vocab_qwen2", "vocab_llama_spm"]


def json_like() -> Grammar:
    """JSON-ish values with the lexeme shapes that make masks hard: strings that close and open inside
    one token (`","`), numbers whose end is only known at the next byte, nesting."""
    ws = lex(rx.repeat(rx.char_class([(32, 32), (10, 10)]), 0, 3))
    string = lex(rx.concat(rx.literal('"'), rx.star(rx.char_class([(34, 34), (92, 92)], negate=True)), rx.literal('"')))
    number = lex(rx.concat(rx.optional(rx.literal("-")), rx.plus(rx.char_class([(48, 57)]))))
    value = alt(string, number, ref("obj"), ref("arr"), literal("true"), literal("null"))
    member = seq(string, ws, literal(":"), ws, ref("value"))
    obj = seq(literal("{"), ws, opt(seq(member, star(seq(ws, literal(","), ws, member)))), ws, literal("}"))
    arr = seq(literal("["), opt(seq(ref("value"), star(seq(literal(","), ws, ref("value"))))), literal("]"))
    return Grammar({"root": ref("value"), "value": value, "obj": obj, "arr": arr})


def grammars() -> dict[str, Grammar]:
    email = rx.concat(
        rx.plus(rx.char_class([(97, 122), (48, 57), (46, 46)])),
        rx.literal("@"),
        rx.plus(rx.char_class([(97, 122)])),
        rx.literal("."),
        rx.repeat(rx.char_class([(97, 122)]), 2, 4),
    )
    unicode_words = rx.concat(rx.plus(rx.char_class([(0x4E00, 0x9FFF), (0xE9, 0xE9)])), rx.literal("!"))
    return {
        "email": Grammar({"root": lex(email)}),
        "unicode": Grammar({"root": lex(unicode_words)}),
        "json": json_like(),
        "gbnf_c": Grammar.from_ebnf((assets.llama_cpp_vendor_dir() / "grammars" / "c.gbnf").read_text()),
        "tool_call": Grammar(
            {
                "root": seq(
                    token("<|start_header_id|>"), literal("f("), lex(rx.plus(rx.char_class([(48, 57)]))), literal(")")
                )
            }
        ),
    }


def brute_force(matcher) -> np.ndarray:
    config = matcher._history[-1]
    parser = matcher.compiled.parser
    vocab = matcher.compiled.vocab
    allowed = np.zeros(vocab.size, dtype=bool)
    first_bytes = parser.allowed_bytes(config)
    for t, text in enumerate(vocab.token_bytes):
        if vocab.is_special[t]:
            fresh = [s for s, state in config.scans if state == s.lex_start and t in s.tokens]
            allowed[t] = bool(fresh)
        elif text and text[0] in first_bytes:
            allowed[t] = parser.step_bytes(config, text) is not None
    if config.accepting:
        allowed[list(vocab.eos_ids)] = True
    return allowed


def assert_mask_is_brute_force(compiled, prefix: bytes) -> None:
    """After `prefix`, the engine's mask equals the brute-force one (the first differences shown)."""
    matcher = compiled.matcher()
    assert matcher.advance_bytes(prefix)
    got = unpack_bitmask(matcher._mask(), compiled.vocab.size)
    want = brute_force(matcher)
    diff = np.flatnonzero(got != want)
    assert not diff.size, [(int(t), compiled.vocab.token_bytes[t], bool(got[t])) for t in diff[:10]]


def random_walk(compiled, steps: int, seed: int, twins=()):
    """Matchers at successive states of a random walk through allowed tokens; `twins` (matchers
    of another compile of the same grammar) take the same tokens."""
    rng = random.Random(seed)
    matcher = compiled.matcher()
    for _ in range(steps):
        yield matcher
        choices = [t for t in matcher.allowed_token_ids().tolist() if t not in compiled.vocab.eos_ids]
        if not choices:
            return
        token = rng.choice(choices)
        assert matcher.advance(token) and all(twin.advance(token) for twin in twins)


@pytest.mark.parametrize("vocab_name", VOCABS)
@pytest.mark.parametrize("grammar_name", ["email", "unicode", "json", "gbnf_c"])
def test_masks_equal_brute_force(request, vocab_name, grammar_name):
    vocab = request.getfixturevalue(vocab_name)
    compiled = grammask.compile(grammars()[grammar_name], vocab)
    for matcher in random_walk(compiled, steps=6, seed=zlib.crc32(f"{vocab_name}{grammar_name}".encode())):
        got = unpack_bitmask(matcher._mask(), vocab.size)
        want = brute_force(matcher)
        diff = np.flatnonzero(got != want)
        assert not diff.size, [(int(t), vocab.token_bytes[t], bool(got[t])) for t in diff[:10]]


def test_special_token_terminal(vocab_llama3):
    compiled = grammask.compile(grammars()["tool_call"], vocab_llama3)
    matcher = compiled.matcher()
    tag = vocab_llama3.token_id("<|start_header_id|>")
    assert matcher.allowed_token_ids().tolist() == [tag]
    assert not matcher.advance(vocab_llama3.token_id("f"))
    assert matcher.advance(tag)
    assert matcher.forced_bytes() == b"f("
    for t in [
        vocab_llama3.token_id("f"),
        vocab_llama3.token_id("("),
        vocab_llama3.token_id("42"),
        vocab_llama3.token_id(")"),
    ]:
        assert matcher.advance(t)
    assert matcher.can_finish()
    assert set(matcher.allowed_token_ids().tolist()) == set(vocab_llama3.eos_ids)


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"type": "string"}},
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
        "bio": {"type": "string", "minLength": 3, "maxLength": 100},  # one lexeme
        "essay": {"type": "string", "maxLength": 300},  # lexemes of at most 64 characters
        "child": {"$ref": "#"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "prefix",
    [
        b"",
        b'{"name": "ab',  # inside a bounded string
        b'{"name": "a", "tags": ["x\\',  # inside an escape of an unbounded string (the JSON-string slice)
        b'{"name": "a", "child": {"name": "b", "child": {"name": "c", "tags": []',  # three objects deep
        b'{"name": "a", "child": {"name": "b", "code": "AB-1',  # a pattern, two deep: tokens may close both
        b'{"name": "a", "bio": "',  # 100 characters left: the slice of tokens up to 16 bytes
        b'{"name": "a", "bio": "\xc3\xa9' + b"x" * 86,  # 13 left: the slice of tokens up to 8 bytes
        b'{"name": "a", "bio": "' + b"y" * 94,  # 6 left: no slice
        b'{"name": "a", "essay": "' + b"x" * 60,  # 4 left in a 64-character lexeme: tokens split at its end
    ],
)
def test_json_schema_masks_equal_brute_force(vocab_llama3, prefix):
    """Real JSON Schema lexemes, nested objects (abstract sets), bounded strings and slices."""
    assert_mask_is_brute_force(grammask.compile(Grammar.from_json_schema(SCHEMA), vocab_llama3), prefix)


@pytest.mark.parametrize(("left", "bound"), [(None, None), (99, 16), (16, 16), (15, 8), (8, 8), (7, -1)])
def test_a_string_takes_the_widest_slice_its_characters_left_allow(vocab_llama3, left, bound):
    """Inside `bio` (at most 100 characters) the slice of tokens of at most 16 or 8 bytes serves
    while that many characters are left; an unbounded string takes the slice of any length.
    Without numba the search visits fewer pairs (`_SLICE_PAIRS_NUMPY`) and may prove a narrower
    slice, or none, but never a wider one."""
    compiled = grammask.compile(Grammar.from_json_schema(SCHEMA), vocab_llama3)
    matcher = compiled.matcher()
    text = b'{"name": "a", "tags": ["' if left is None else b'{"name": "a", "bio": "' + b"y" * (100 - left)
    assert matcher.advance_bytes(text)
    ((_, state),) = matcher._history[-1].scans
    found = compiled.masks._widest_slice(state)
    width = -1 if found is None else compiled.masks.tables.json_string[found].max_len
    if kernels.AVAILABLE or bound in (None, -1):
        assert width == bound
    else:
        assert width is not None and width <= bound


OPEN_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "nation": {"enum": ["fr", "de", 12, None]},
        "value": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "number"}, {"const": "n/a"}]},
    },
    "additionalProperties": {"type": ["string", "integer"]},
}


@pytest.mark.parametrize("prefix", [b"", b"{", b'{"', b'{"na', b'{"nation": ', b'{"value": "', b'{"value": 1', b'{"x'])
def test_several_alive_lexemes_masks_equal_brute_force(vocab_llama3, prefix):
    """States where several lexemes are alive (known keys beside any other key, alternatives of a
    value), whose walks are unions of each lexeme's walk."""
    assert_mask_is_brute_force(grammask.compile(Grammar.from_json_schema(OPEN_SCHEMA), vocab_llama3), prefix)


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("prefix", [b"{", b'{"name": "'])
def test_crossings_step_again_after_missing_rows(vocab_llama3, monkeypatch, prefix):
    """Tokens that cross into lexemes whose rows are not built yet make the compiled crossing
    ask for those rows, which are built before it steps again: the masks stay exact. (Inside a
    string value closed by `","` and the next key, the next key's start has no row yet.)"""
    calls = []
    cross = kernels.cross_tokens

    def counted(*args):
        found = cross(*args)
        calls.append(found[-1].size)
        return found

    monkeypatch.setattr(kernels, "cross_tokens", counted)
    compiled = CompiledGrammar(Grammar.from_json_schema(OPEN_SCHEMA), vocab_llama3)  # fresh: no rows yet
    assert_mask_is_brute_force(compiled, prefix)
    assert any(calls), "no crossing met a missing row"


def test_earley_sets_that_expect_the_same_lexemes_share_the_lexer_part_of_split_checks(vocab_llama3):
    """The objects of an array are parsed at different Earley sets, but after each string value
    the same lexemes are expected: the lexer's part of the split check (`_below_splits`) is
    computed once, the parser's part per set, and masks stay exact."""
    schema = {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}
    compiled = CompiledGrammar(Grammar.from_json_schema(schema), vocab_llama3)  # a fresh cache
    matcher = compiled.matcher()
    for text in (b'[{"a": "x', b'"}, {"a": "y', b'"}, {"a": "z'):
        assert matcher.advance_bytes(text)
        got = unpack_bitmask(matcher._mask(), vocab_llama3.size)
        assert np.array_equal(got, brute_force(matcher))
    keys = [key[0] for key in compiled.cache._data]
    assert keys.count("below") < keys.count("splits")


def test_union_walk_equals_the_walk_of_the_combined_state(vocab_llama3):
    compiled = grammask.compile(Grammar.from_json_schema(OPEN_SCHEMA), vocab_llama3)
    masks, lexer = compiled.masks, compiled.parser.lexer
    matcher = compiled.matcher()
    combined = 0
    for data in (b'{"', b'{"na', b'{"value": ', b'{"x": ', b'{"nation": '):
        twin = matcher.copy()
        assert twin.advance_bytes(data)
        for _, state in twin._history[-1].scans:
            if len(lexer.pairs(state)) < 2:
                continue
            combined += 1
            union, direct = masks.walk(state), masks._walk(state, 0)
            assert np.array_equal(union.alive, direct.alive)
            for k, s in lexer.pairs(state):  # each lexeme's splits, where its walk is over the whole trie
                own = masks.walk(lexer.single(k, s))
                if any(splits.trie != 0 for splits in own.splits):
                    continue  # walked over a slice's rest: other nodes
                mine = {node for splits in own.splits for node in splits.nodes.tolist()}
                theirs = {
                    node
                    for splits in direct.splits
                    for node, q in zip(splits.nodes.tolist(), splits.states.tolist(), strict=True)
                    if k in lexer.accepts(q)
                }
                assert mine == theirs
    assert combined >= 2


def test_splits_are_only_where_a_next_lexeme_can_begin(vocab_llama3):
    """A split node is a trie node where a lexeme ends and tokens go on below with a byte that can
    begin a lexeme after it (`Lexer.boundary`). A regex that is one lexeme has none, however many
    of its states accept; a quoted word in a list splits only above a `,` or a `]`. The masks
    stay exact."""
    words = grammask.compile(Grammar.from_regex("[a-z]+( [a-z]+)*"), vocab_llama3)
    matcher = words.matcher()
    assert matcher.advance_bytes(b"the")
    assert all(words.masks.walk(state).splits == () for _, state in matcher._history[-1].scans)
    assert_mask_is_brute_force(words, b"the")

    word = lex(rx.concat(rx.literal('"'), rx.star(rx.char_class([(97, 122)])), rx.literal('"')))
    items = seq(ref("root"), star(seq(literal(","), ref("root"))))
    listed = grammask.compile(Grammar({"root": alt(word, seq(literal("["), items, literal("]")))}), vocab_llama3)
    matcher = listed.matcher()
    assert matcher.advance_bytes(b'["ab')
    index = listed.masks.tables.index
    nodes = [n for _, q in matcher._history[-1].scans for s in listed.masks.walk(q).splits for n in s.nodes.tolist()]
    assert nodes, "no token goes on past the closing quote"
    for node in nodes:
        assert {ord(","), ord("]")} & set(index.byte[index.first_child[node] : index.child_end[node]].tolist())
    assert_mask_is_brute_force(listed, b'["ab')


def parens() -> Grammar:
    return Grammar({"root": alt(seq(literal("("), ref("root"), literal(")")), literal("x"))})


def test_nested_depths_share_walks_and_masks(vocab_llama3):
    """`root ::= "(" root ")" | "x"`: going deeper computes no new trie walk and no new abstract
    scan; only the few tokens that close more levels than the abstract set can see are checked
    per depth. Masks stay exact: `)))` may follow `x` at depth 50, not at depth 2."""
    compiled = grammask.compile(parens(), vocab_llama3)
    masks = compiled.masks
    matcher = compiled.matcher()
    assert matcher.advance_bytes(b"((")
    at_two = unpack_bitmask(matcher._mask(), vocab_llama3.size)
    assert np.array_equal(at_two, brute_force(matcher))
    assert matcher.advance_bytes(b"(")
    matcher._mask()  # depth 3: the first set whose abstract set deeper ones share, computed as is
    assert matcher.advance_bytes(b"(")
    matcher._mask()  # depth 4: the second such set, computed from the abstract set
    walks = masks.walks_computed
    abstract = sum(1 for key in compiled.cache._data if key[0] == "abstract")
    assert matcher.advance_bytes(b"(" * 46)
    at_fifty = unpack_bitmask(matcher._mask(), vocab_llama3.size)
    assert masks.walks_computed == walks
    assert sum(1 for key in compiled.cache._data if key[0] == "abstract") == abstract
    assert np.array_equal(at_fifty, brute_force(matcher))
    closers = vocab_llama3.token_id(")))")
    shallow = compiled.matcher()
    assert shallow.advance_bytes(b"((x") and matcher.advance_bytes(b"x")
    assert matcher.is_allowed(closers) and not shallow.is_allowed(closers)
    assert np.array_equal(unpack_bitmask(matcher._mask(), vocab_llama3.size), brute_force(matcher))


def test_grammars_with_the_same_lexeme_share_its_walks(vocab_llama3):
    """A walk inside a lexeme depends on what can follow the state and on the bytes that may begin
    a lexeme after it, not on the grammar: a second grammar where `[a-z]+` is also followed by `)`
    takes the first one's walk after `(ab` from the vocabulary's tables, its splits in its own
    lexer's states, and one where `]` follows it computes its own (`ab]` splits there, `ab)` does
    not). Masks stay those of brute force."""
    word = lex(rx.plus(rx.char_class([(97, 122)])))
    first = Grammar({"root": alt(seq(literal("("), ref("root"), literal(")")), word)})
    brackets = seq(literal("["), ref("root"), literal(")"))
    same = Grammar({"root": alt(brackets, seq(literal("("), ref("root"), literal(")")), word)})
    other = Grammar({"root": alt(seq(literal("("), ref("root"), literal("]")), word)})
    computed = []
    for grammar in (first, same, other):
        compiled = CompiledGrammar(grammar, vocab_llama3)
        if grammar is first:
            compiled.masks.tables.walks.clear()  # (earlier tests may have walked `[a-z]+`)
        before = compiled.masks.walks_computed  # (the first mask's walks, made by the compile)
        assert_mask_is_brute_force(compiled, b"(ab")  # walks inside `[a-z]+` and from `)`'s start
        computed.append(compiled.masks.walks_computed - before)
        for prefix in (b"(abc", b"((x", b"(((yz"):
            assert_mask_is_brute_force(compiled, prefix)
    assert computed == [2, 0, 2]


def test_members_of_other_names_share_the_walks_of_their_values(vocab_llama3):
    """A member's lexeme is its name, `:` and its value: states past the name have the same
    residual in every member of every schema with the same value and what follows it
    (`ByteDFA.residual`), and so the same walk. A schema whose names differ from the first one's
    computes only the walks of its names. Masks stay those of brute force."""

    def schema(first: str, second: str) -> dict:
        value = {"type": "string"}
        return {"type": "object", "properties": {first: value, second: value}, "required": [first, second]}

    texts = [b'{"%s": "some text', b'{"%s": "a", "%s": "more \\\\ text', b'{"%s": "a", "%s": "b"']
    computed = []
    for names in (("alpha", "beta"), ("gamma", "delta_beta")):
        compiled = grammask.compile(Grammar.from_json_schema(schema(*names)), vocab_llama3)
        if not computed:
            compiled.masks.tables.walks.clear()  # (earlier tests may have walked these values)
        before = compiled.masks.walks_computed
        for text in texts:
            assert_mask_is_brute_force(compiled, text % tuple(n.encode() for n in names[: text.count(b"%s")]))
        computed.append(compiled.masks.walks_computed - before)
    assert 0 < computed[1] < computed[0] / 2, computed


def test_a_lexeme_that_accepts_nothing_shares_its_empty_walk(vocab_llama3):
    """A difference may turn out empty only once compiled: the keys that no pattern takes, where
    one pattern takes them all. Its lexeme is expected, never entered: a second grammar reads its
    walk, with no split, from the vocabulary's tables."""
    schema = {"type": "object", "patternProperties": {".*": {"type": "string"}}}
    for _ in range(2):  # (two grammars: the compile cache would give the first one back)
        compiled = CompiledGrammar(Grammar.from_json_schema(schema), vocab_llama3)
        for prefix in (b"{", b'{"a": "x", ', b'{"a": "x", "b'):
            assert_mask_is_brute_force(compiled, prefix)


def test_cache_stays_within_its_budget(vocab_llama3):
    """A long random walk under a small byte budget: memory stays under it, masks never change."""
    budget = 160 * 2**10  # about ten masks
    small = grammask.compile(grammars()["json"], vocab_llama3, limits=grammask.Limits(max_cache_bytes=budget))
    large = grammask.compile(grammars()["json"], vocab_llama3)
    twin = large.matcher()
    rng = random.Random(7)
    matcher = small.matcher()
    for _ in range(300):
        assert np.array_equal(matcher._mask(), twin._mask())
        assert small.cache.nbytes <= budget
        choices = [t for t in matcher.allowed_token_ids().tolist() if t not in vocab_llama3.eos_ids]
        if not choices:
            matcher, twin = small.matcher(), large.matcher()
            continue
        token = rng.choice(choices)
        assert matcher.advance(token) and twin.advance(token)
    stats = small.cache_stats()
    assert stats.evictions > 0 and stats.bytes <= budget
    # The count is no lower than the arrays the entries keep alive (shared ones counted once).
    held = {id(a): a.nbytes for value in small.cache._data.values() for a in _arrays_in(value)}
    assert 0 < sum(held.values()) <= small.cache.nbytes


def _arrays_in(value: object) -> list[np.ndarray]:
    """The numpy arrays a cached value holds (in tuples and dataclasses, as the engine stores them;
    not the vocabulary's trie index, which split nodes name and every grammar shares)."""
    if isinstance(value, TrieIndex):
        return []
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, tuple):
        return [a for item in value for a in _arrays_in(item)]
    if dataclasses.is_dataclass(value):
        return [a for f in dataclasses.fields(value) for a in _arrays_in(getattr(value, f.name))]
    return []


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
def test_compiled_walk_takes_subtrees_its_state_loops_on_whole(vocab_llama3):
    """Inside `[a-z]+`, a subtree whose bytes are all letters is alive whole: the compiled walk
    computes the state's loop set (the letters) and gives the numpy walk's result."""
    compiled = CompiledGrammar(Grammar.from_regex("[a-z]+( [a-z]+)*"), vocab_llama3)
    matcher = compiled.matcher()
    assert matcher.advance_bytes(b"the")
    (state,) = matcher._history[-1].states
    lexer, masks = compiled.parser.lexer, compiled.masks
    lexer.loops[state], lexer.loop_classes[state] = 0, 0  # (the first mask's walk computed them)
    a, b = masks._walk_compiled(state, 0), masks._walk_numpy(state, 0)
    assert np.array_equal(a.alive, b.alive) and not a.splits and not b.splits
    loops = np.unpackbits(lexer.loops[state].view(np.uint8), bitorder="little").astype(bool)
    assert np.array_equal(loops, lexer.table[state] == state)
    assert np.flatnonzero(loops).tolist() == list(range(ord("a"), ord("z") + 1))
    assert lexer.loop_classes[state] == 1 << 16 | 1 << 6 | 1 << 7  # a-z: in 0x60-0x6f and 0x70-0x7f


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("prefix", [b"", b"a", b"ab"])
def test_compiled_walk_allows_every_token_with_the_same_bytes(prefix):
    """Tokens with the same bytes end at one trie node (`Preorder.token` is -2 there): the walk
    allows all of them, inside a lexeme and across a boundary alike."""
    pieces = [b"a", b"ab", b"ab", b"abab", b"b", b"b", b"ba", b"c", b"c", b"</s>"]
    vocab = grammask.Vocabulary(pieces, special_ids=[9], eos_ids=[9])
    compiled = CompiledGrammar(Grammar.from_ebnf('root ::= ("ab")+ "c"?'), vocab)
    assert (compiled.masks.tables.index.preorder.token == -2).sum() == 3
    assert_mask_is_brute_force(compiled, prefix)


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("grammar_name", ["json", "gbnf_c", "unicode", "email"])
def test_compiled_walk_equals_numpy_walk(vocab_llama3, grammar_name):
    compiled = grammask.compile(grammars()[grammar_name], vocab_llama3)
    masks = compiled.masks
    tables = masks.tables
    for matcher in random_walk(compiled, steps=8, seed=3):
        for _, state in matcher._history[-1].scans:
            for trie in range(1 + len(tables.json_string)):  # the whole vocabulary's, then each slice's rest
                a, b = masks._walk_compiled(state, trie), masks._walk_numpy(state, trie)
                assert np.array_equal(a.alive, b.alive)
                assert [s.trie for s in a.splits] == [s.trie for s in b.splits] and len(a.splits) <= 1
                pairs = [
                    sorted(zip(s.nodes.tolist(), s.states.tolist(), strict=True)) for w in (a, b) for s in w.splits
                ]
                assert pairs[: len(a.splits)] == pairs[len(a.splits) :]


@pytest.mark.parametrize("grammar_name", ["json", "gbnf_c"])
def test_masks_while_the_lexers_arrays_grow_equal_masks_without(vocab_llama3, monkeypatch, grammar_name):
    """A lexer's per-state arrays start small and double as states come, and the kernels read
    them after each growth: from room for 2 states, the masks are those of room for 1,024."""
    grammar = grammars()[grammar_name]
    roomy = CompiledGrammar(grammar, vocab_llama3)
    monkeypatch.setattr(lexer_module, "_FIRST_STATES", 2)
    growing = CompiledGrammar(grammar, vocab_llama3)
    twin = growing.matcher()
    for matcher in random_walk(roomy, steps=12, seed=5, twins=(twin,)):
        want = matcher._mask()
        roomy.masks.tables.walks.clear()  # the twin walks its own lexer (not the shared walks)
        assert np.array_equal(twin._mask(), want)
    lexer = growing.parser.lexer
    arrays = (lexer.expanded, lexer.boundary, lexer.loops, lexer.loop_classes, lexer._owner, lexer.accept_class)
    assert 2 < len(lexer.expanded) < len(lexer.table) and {len(a) for a in arrays} == {len(lexer.expanded)}


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("grammar_name", ["json", "gbnf_c"])
def test_masks_without_numba_equal_masks_with_it(vocab_llama3, monkeypatch, grammar_name):
    """The numpy fallback (no `grammask[fast]`) computes the same masks as the compiled kernels."""
    grammar = grammars()[grammar_name]
    compiled, fallback = CompiledGrammar(grammar, vocab_llama3), CompiledGrammar(grammar, vocab_llama3)
    twin = fallback.matcher()
    for matcher in random_walk(compiled, steps=12, seed=11, twins=(twin,)):
        monkeypatch.setattr(kernels, "AVAILABLE", True)
        want = matcher._mask()
        monkeypatch.setattr(kernels, "AVAILABLE", False)
        compiled.masks.tables.walks.clear()  # the twin walks with numpy (not the shared walks)
        assert np.array_equal(twin._mask(), want)


def test_runs_of_nested_lexemes_in_one_token_share_their_sets(vocab_llama3, monkeypatch):
    """`root ::= "-" root | "(" root ")" | "x"`: a token of sixteen `-` is sixteen lexemes, each
    at a new depth. From `_SHARED_LEVEL` lexemes in, a split check goes on from abstract sets,
    which are one for every depth, so the run costs a few Earley sets instead of one per
    character; the masks stay those of brute force, where the run ends in `)` too."""
    nested = seq(literal("("), ref("root"), literal(")"))
    grammar = Grammar({"root": alt(seq(literal("-"), ref("root")), nested, literal("x"))})

    def sets_made(level: int) -> int:
        """Earley sets made by computing the masks (the brute force makes the concrete ones)."""
        monkeypatch.setattr(masks_module, "_SHARED_LEVEL", level)
        compiled = CompiledGrammar(grammar, vocab_llama3)
        made = 0
        for prefix in (b"", b"((", b"(-(-", b"-((x"):
            matcher = compiled.matcher()
            assert matcher.advance_bytes(prefix)
            before = sum(map(len, compiled.parser._sets))
            got = unpack_bitmask(matcher._mask(), vocab_llama3.size)
            made += sum(map(len, compiled.parser._sets)) - before
            assert np.array_equal(got, brute_force(matcher)), prefix
        return made

    assert vocab_llama3.token_id("-" * 16) >= 0
    shared, unshared = sets_made(masks_module._SHARED_LEVEL), sets_made(10**9)
    assert shared * 3 < unshared, (shared, unshared)


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
def test_the_next_lexeme_of_many_tokens_is_found_by_a_trie_walk_as_token_by_token(vocab_llama3, monkeypatch):
    """Where a C expression goes on after `return`, most of Llama 3's tokens go on into the next
    lexeme. From `_MANY_BELOW` tokens below the split nodes on, a trie walk below the nodes finds
    how: the same tokens end inside it, and the same go on past it, at the same offsets and
    lexer states, as stepping each token on its own finds. Here every crossing below split nodes
    is made both ways (nested nodes leave it to the tokens); the masks stay brute force's."""
    monkeypatch.setattr(masks_module, "_MANY_BELOW", 0)
    walked = masks_module.MaskComputer._cross_below
    sizes = []

    def ways(crossing):
        """The (token's position, offset after the lexeme, lexer state there) of each way on."""
        return sorted(zip(crossing.entry.tolist(), crossing.after.tolist(), crossing.ended.tolist(), strict=True))

    def both(self, start, index, group, tokens):
        found = walked(self, start, index, group, tokens)
        if found is not None:
            bounds, _ = self.lexer.starts_by_byte(start)
            same, offsets, _ = kernels.tokens_below(
                group, index.first_child, index.child_end, index.byte, index.end_lo, index.below_hi,
                index.trie.depth, index.trie.sorted_tokens, bounds,
            )  # fmt: skip
            assert np.array_equal(same, tokens)
            stepped = self._cross(start, tokens, offsets)
            assert np.array_equal(found.ok, stepped.ok) and np.array_equal(found.died, stepped.died)
            assert ways(found) == ways(stepped)
            sizes.append(len(tokens))
        return found

    monkeypatch.setattr(masks_module.MaskComputer, "_cross_below", both)
    compiled = CompiledGrammar(grammars()["gbnf_c"], vocab_llama3)
    assert_mask_is_brute_force(compiled, b"int f(int a){return")
    for matcher in random_walk(compiled, steps=8, seed=5):
        matcher._mask()
    assert max(sizes) > 20000 and len(sizes) >= 3, sizes


@pytest.mark.parametrize("few", [0, 1, 64])
def test_long_runs_of_lexemes_are_checked_depth_first_and_share_their_rests(vocab_llama3, monkeypatch, few):
    """Llama 3 has tokens of up to 96 `-`, each `-` a lexeme at a new depth of
    `root ::= "-" root | "(" root ")" | "x"`. Past `_SHARED_LEVEL` lexemes, at most `_FEW_GOING`
    tokens still going on are checked one at a time, depth first (before it, at most
    `_FEW_SOON`), and each (set, rest of a token) is decided once: the runs share their rests, so
    far fewer are decided than the runs have bytes. Whichever way a token goes, the masks are
    those of brute force. Where each `-` closes a level (`root ::= "(" root "-" | "x"`), a run
    goes past what the abstract sets know: it is unsure there and checked again from the
    concrete sets."""
    monkeypatch.setattr(masks_module, "_FEW_GOING", few)
    monkeypatch.setattr(masks_module, "_FEW_SOON", min(few, masks_module._FEW_SOON))
    nested = seq(literal("("), ref("root"), literal(")"))
    opening = Grammar({"root": alt(seq(literal("-"), ref("root")), nested, literal("x"))})
    closing = Grammar({"root": alt(seq(literal("("), ref("root"), literal("-")), literal("x"))})
    cases = [(opening, b""), (opening, b"(-(-"), (closing, b"(" * 20 + b"x"), (closing, b"(" * 40 + b"x")]
    rests = 0
    for grammar, prefix in cases:
        compiled = CompiledGrammar(grammar, vocab_llama3)
        matcher = compiled.matcher()
        assert matcher.advance_bytes(prefix)
        got = unpack_bitmask(matcher._mask(), vocab_llama3.size)
        assert np.array_equal(got, brute_force(matcher)), prefix
        if grammar is opening:  # (from the concrete sets of `closing`, every rest is new)
            rests += sum(1 for key in compiled.cache._data if key[0] == "rest")
    run_bytes = sum(len(text) for text in vocab_llama3.token_bytes if text and set(text) == {ord("-")})
    assert run_bytes > 500
    assert (rests > 0) == (few > 0), rests
    assert rests < run_bytes, (rests, run_bytes)


def test_walks_and_split_results_are_kept_as_objects_the_collector_does_not_scan(vocab_llama3):
    """Most walks are inside a lexeme and split nowhere: the grammar's cache keeps such a walk as
    its mask alone, an array, which Python's garbage collector never scans. The other walks and
    the results of split checks are kept as plain tuples of arrays and numbers, which it stops
    tracking (a named tuple or a dataclass object is one more for every full collection). Read
    back, a walk is the same walk, not computed again."""
    import gc

    compiled = CompiledGrammar(Grammar.from_json_schema(OPEN_SCHEMA), vocab_llama3)
    for matcher in random_walk(compiled, steps=20, seed=3):
        matcher._mask()
    kept = {key[1]: value for key, value in compiled.cache._data.items() if key[0] == "walk"}
    bare = {state for state, value in kept.items() if isinstance(value, np.ndarray)}
    assert bare and len(bare) < len(kept)
    results = [
        value for key, value in compiled.cache._data.items() if key[0] in ("walk", "abstract", "below", "splits")
    ]
    assert {type(value) for value in results} == {np.ndarray, tuple}
    gc.collect()
    assert not any(gc.is_tracked(value) for value in results)
    computed = compiled.masks.walks_computed
    for state, value in kept.items():
        walk = compiled.masks.walk(state)
        assert (state in bare) == (not walk.splits)
        assert walk.alive is (value if state in bare else value[0])
        assert not gc.is_tracked(walk.alive)
    assert compiled.masks.walks_computed == computed


@given(st.lists(st.integers(0, 5), min_size=1, max_size=3 * masks_module._FEW_LABELS))
def test_groups_number_labels_by_group(labels):
    """`_groups` gives each distinct label one group, and each group the position of its label's
    first occurrence (with a dict up to `_FEW_LABELS` labels, with `np.unique` past them)."""
    array = np.array(labels, dtype=np.int64)
    first, group = masks_module._groups(array)
    assert sorted(array[first].tolist()) == sorted(set(labels))
    assert (array[first[group]] == array).all()
    assert all(labels.index(labels[i]) == i for i in first.tolist())
