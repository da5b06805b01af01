"""The grammar-wide lazy lexer, against its component DFAs stepped one by one."""

import gc
import mmap
import random
from collections import deque

import numpy as np
import pytest

import grammask
from grammask.automata.compile import compile_regex
from grammask.engine import lexer as lexer_module
from grammask.engine.lexer import Lexer
from grammask.errors import GrammarError
from grammask.grammar import Grammar
from grammask.ir import regex as rx
from grammask.ir.grammar import alt, lex, seq, token
from grammask.limits import DEFAULT_LIMITS, Limits
from tests.engine.test_masks import random_walk

LEXEMES = [
    rx.concat(rx.literal('"'), rx.star(rx.char_class([(34, 34), (92, 92)], negate=True)), rx.literal('"')),
    rx.plus(rx.char_class([(48, 57)])),
    rx.concat(rx.plus(rx.char_class([(48, 57)])), rx.literal("."), rx.plus(rx.char_class([(48, 57)]))),
    rx.literal("true"),
    rx.literal("tru"),
    rx.star(rx.char_class([(0x4E00, 0x9FFF), (97, 122)])),
    # with most bytes live, rows with it are made densely (`Lexer._dense_row`)
    rx.concat(rx.star(rx.char_class([(34, 34)], negate=True)), rx.literal("x")),
]
#: Per lexeme, the lexemes that may come after it (`Parser` gives the grammar's `following_lexemes`).
FOLLOWS = [(1, 3), (), (0,), (5, 6), (2,), (), (4, 1)]


@pytest.mark.parametrize(
    ("reserved", "first", "narrow"),
    [(1 << 16, 1 << 10, 1 << 16), (1 << 16, 2, 1 << 16), (8, 1 << 10, 1 << 16), (8, 1 << 10, 16)],
)
def test_states_are_the_alive_pairs_of_the_component_dfas(monkeypatch, reserved, first, narrow):
    """With the table reserved up front, with per-state arrays that grow inside it, with a
    table that must grow too (a small reserve), and with a table that grows from 16-bit states
    to 32-bit ones on the way (16-bit rows made to number only 16 states)."""
    monkeypatch.setattr(lexer_module, "_RESERVED_STATES", reserved)
    monkeypatch.setattr(lexer_module, "_FIRST_STATES", first)
    monkeypatch.setattr(lexer_module, "_NARROW_STATES", narrow)
    limit = 50_000
    dfas = [compile_regex(node) for node in LEXEMES]
    lexer = Lexer(dfas.__getitem__, Limits(max_lexer_states=limit), FOLLOWS)
    assert lexer.table.dtype == np.uint16
    rng = random.Random(0)
    alphabet = list(b'"019.truea\\x') + list("中".encode())
    for _ in range(300):
        terminals = tuple(sorted(rng.sample(range(len(dfas)), rng.randint(1, len(dfas)))))
        state = lexer.start(terminals)
        pairs = {(k, 1) for k in terminals}
        for byte in rng.choices(alphabet, k=rng.randint(1, 8)):
            state = lexer.step(state, byte)
            pairs = {(k, int(dfas[k].transitions[s, byte])) for k, s in pairs} - {(k, 0) for k in range(len(dfas))}
            assert set(lexer.pairs(state)) == pairs
            assert lexer.accepts(state) == tuple(sorted(k for k, s in pairs if dfas[k].accepting[s]))
            after = np.zeros(256, dtype=bool)  # the bytes that can begin a lexeme after one ending here
            for k, s in pairs:
                if dfas[k].accepting[s]:
                    for j in FOLLOWS[k]:
                        after[dfas[j].first_bytes] = True
            assert lexer.follows[lexer.boundary[state]].tolist() == after.tolist()
            assert (lexer.boundary[state] == 0) == (not after.any())
            if not pairs:
                assert state == 0
                break
    # whole rows, computed by `gather` in bulk, agree with the single transitions `step` made
    # before any row of a state of several lexemes existed
    if first == 2:  # the per-state arrays grew, inside the table's reserve
        assert len(lexer.expanded) >= lexer.n_states > 2 and len(lexer.table) == limit
    if reserved == 8 and narrow > limit:  # the table grew past its small reserve, with the per-state arrays
        assert len(lexer.table) == len(lexer.expanded) >= lexer.n_states > 8
    if narrow < lexer.n_states:  # 32-bit rows, reserved up to the limit when the table crossed
        assert lexer.table.dtype == np.int32 and len(lexer.table) == limit
    states = np.arange(1, lexer.n_states, dtype=np.int32)
    data = np.array([rng.choice(alphabet) for _ in states], dtype=np.int32)
    stepped = [lexer.step(int(s), int(b)) for s, b in zip(states, data, strict=True)]
    assert not lexer.expanded[[s for s in states.tolist() if len(lexer.pairs(s)) > 1]].any()
    assert lexer.gather(states, data).tolist() == stepped


def test_rows_written_while_the_32_bit_table_fills_reach_it(monkeypatch):
    """From three quarters full, a 16-bit table is copied into its 32-bit successor a few rows at
    a time; a row computed after its place was copied is copied again, so that after the switch
    every row equals that of a lexer that never switched, driven alike. Meanwhile the lexer's size
    counts both tables."""
    dfas = [compile_regex(node) for node in LEXEMES]
    rng = random.Random(1)
    alphabet = list(b'"019.truea\\x') + list("中".encode())
    ops = []  # lexemes to start, then bytes to step and gather rows along
    for _ in range(400):
        terminals = tuple(sorted(rng.sample(range(len(dfas)), rng.randint(2, len(dfas)))))
        ops.append((terminals, bytes(rng.choices(alphabet, k=rng.randint(1, 6)))))

    def drive(lexer: Lexer) -> None:
        for terminals, text in ops:
            state = lexer.start(terminals)
            for byte in text:
                states = np.array([state], dtype=np.int32)
                state = int(lexer.gather(states, np.array([byte], dtype=np.int32))[0])  # makes the row
                if not state:
                    break

    reference = Lexer(dfas.__getitem__, Limits(max_lexer_states=50_000), FOLLOWS)
    drive(reference)
    monkeypatch.setattr(lexer_module, "_RESERVED_STATES", 64)
    monkeypatch.setattr(lexer_module, "_NARROW_STATES", 64)
    monkeypatch.setattr(lexer_module, "_COPY_ROWS", 2)
    copied_again = []
    written = Lexer._written

    def spy(self: Lexer, start: int, stop: int) -> None:
        copied_again.append(start < self._copied)
        written(self, start, stop)
        # the compile cache sizes grammars by `nbytes`: both tables count while both are held
        assert self.nbytes >= self.n_states * 512 + self._copied * 1024

    monkeypatch.setattr(Lexer, "_written", spy)
    lexer = Lexer(dfas.__getitem__, Limits(max_lexer_states=50_000), FOLLOWS)
    drive(lexer)
    assert 64 < lexer.n_states == reference.n_states and lexer.table.dtype == np.int32
    assert any(copied_again)
    rows = np.flatnonzero(reference.expanded[: reference.n_states])
    assert lexer.expanded[rows].all()
    assert np.array_equal(lexer.table[rows], reference.table[rows])


def test_masks_are_the_same_with_16_and_32_bit_states(monkeypatch, vocab_llama3):
    """A lexer's table holds 16-bit states up to 65,536 states, and 32-bit ones past them; every
    mask of a walk through JSON and C is the same either way, and across the switch (made here
    to come in the middle of the walk)."""
    from grammask.compiler import CompiledGrammar

    schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "array", "items": {}}}}
    c_text = (grammask.assets.llama_cpp_vendor_dir() / "grammars" / "c.gbnf").read_text()
    texts = [b'{"name": "a\\"b", "n": [1.5e3, {"x": null}, "y"]', b"int f(int a){return -a*( 2+a );}"]
    grammars = [Grammar.from_json_schema(schema), Grammar.from_ebnf(c_text)]
    # 16-bit rows made to number fewer states than the walk reaches, but more than the compile lays
    for grammar, text, states in zip(grammars, texts, [256, 64], strict=True):
        narrow = CompiledGrammar(grammar, vocab_llama3)
        with monkeypatch.context() as patch:  # for the other lexer's life: its table grows later
            patch.setattr(lexer_module, "_RESERVED_STATES", states)
            patch.setattr(lexer_module, "_NARROW_STATES", states)
            switching = CompiledGrammar(grammar, vocab_llama3)
            assert narrow.parser.lexer.table.dtype == switching.parser.lexer.table.dtype == np.uint16
            matchers = narrow.matcher(), switching.matcher()
            for i in range(len(text)):
                assert np.array_equal(matchers[0]._mask(), matchers[1]._mask()), text[:i]
                assert all(m.advance_bytes(text[i : i + 1]) for m in matchers)
        assert narrow.parser.lexer.table.dtype == np.uint16 and switching.parser.lexer.table.dtype == np.int32


def test_a_start_state_is_never_reached_by_bytes():
    """`a*b` comes back to its DFA's start on `a`; the lexer keeps "not started" apart, so a
    special token allowed at the start of the lexeme is not allowed after `a`."""
    vocab = grammask.Vocabulary([b"a", b"b", b"<s>", b"</s>"], special_ids=[2], eos_ids=[3])
    grammar = Grammar({"root": alt(lex(rx.concat(rx.star(rx.literal("a")), rx.literal("b"))), token("<s>"))})
    matcher = grammask.compile(grammar, vocab).matcher()
    assert matcher.is_allowed(2)
    assert matcher.advance(0)
    assert not matcher.is_allowed(2) and matcher.is_allowed(0) and matcher.is_allowed(1)


def test_lexer_state_limit_is_a_grammar_error():
    dfas = [compile_regex(rx.repeat(rx.char_class([(97, 122)]), 0, 300))]
    lexer = Lexer(dfas.__getitem__, Limits(max_lexer_states=100), [()])
    start = lexer.start((0,))
    with pytest.raises(GrammarError, match="max_lexer_states"):
        lexer.step(start, 97)


def test_starts_by_byte_are_the_lexemes_a_byte_can_begin():
    """A start state of several lexemes splits into its lexemes' own start states, by first byte:
    stepping each on that byte gives, together, the pairs the combined state steps to."""
    dfas = [compile_regex(node) for node in LEXEMES]
    lexer = Lexer(dfas.__getitem__, Limits(), FOLLOWS)
    rng = random.Random(1)
    for _ in range(50):
        terminals = tuple(sorted(rng.sample(range(len(dfas)), rng.randint(1, len(dfas)))))
        combined = lexer.start(terminals)
        bounds, starts = lexer.starts_by_byte(combined)
        for byte in range(256):
            ones = starts[bounds[byte] : bounds[byte + 1]].tolist()
            assert sorted(ones) == sorted(lexer.start((k,)) for k in terminals if dfas[k].transitions[1, byte])
            stepped = {pair for one in ones for pair in lexer.pairs(lexer.step(one, byte))}
            assert stepped == set(lexer.pairs(lexer.step(combined, byte)))


@pytest.mark.parametrize(
    ("grammar", "texts"),
    [
        (
            Grammar.from_json_schema({"type": "object", "additionalProperties": {"type": "array"}}),
            [b'{"', b"ab", b'": [1', b", 22", b'], "', b"x"],
        ),
        # The start state expects no lexeme, only a special token: a row no block writes.
        (Grammar({"root": seq(token("<|begin_of_text|>"), lex(rx.literal("ok")))}), [b"<|begin_of_text|>", b"o"]),
    ],
)
def test_a_dropped_lexers_table_is_reused_and_its_rows_never_read(vocab_llama3, monkeypatch, grammar, texts):
    """The table of a dropped lexer goes to a small pool, its pages past `max_rows` rows given back,
    and the next lexer takes it. What is left in its rows is never read: with every row but the
    dead state's pointing at state 7, the masks equal those of a lexer on fresh memory."""
    from grammask.compiler import CompiledGrammar

    def masks(compiled: CompiledGrammar) -> list[bytes]:
        matcher, found = compiled.matcher(), [compiled.matcher()._mask().tobytes()]
        for data in texts:
            assert matcher.advance_bytes(data) if data[:1] != b"<" else matcher.advance(vocab_llama3.token_id(data))
            found.append(matcher._mask().tobytes())
        return found

    monkeypatch.setattr(lexer_module._Memory, "max_rows", 16)
    want = masks(CompiledGrammar(grammar, vocab_llama3))
    gc.collect()  # lexers of earlier tests, in reference cycles, are pooled when collected
    lexer_module._Memory.pool.clear()
    # A grammar with other lexemes fills rows; dropped, its table is pooled with what it wrote.
    other = CompiledGrammar(Grammar.from_regex("[a-z]{1,40}@[0-9]{1,40}"), vocab_llama3)
    matcher = other.matcher()
    assert matcher.advance_bytes(b"abc@12")
    assert matcher._mask().any()
    mapping, state = other.parser.lexer._memory.mapping, other.parser.lexer.table.dtype
    del other, matcher
    gc.collect()
    assert [(memory.mapping, memory.rows) for memory in lexer_module._Memory.pool] == [(mapping, 16)]
    rows = np.frombuffer(mapping, dtype=state).reshape(-1, 256)
    assert rows[16:].any(axis=1).sum() == 0 < rows[:16].any(axis=1).sum()  # the pages past them given back
    rows[1:4096] = 7  # stale rows that would mislead
    reused = CompiledGrammar(grammar, vocab_llama3)
    assert reused.parser.lexer._memory.mapping is mapping
    assert masks(reused) == want


@pytest.mark.skipif(not hasattr(mmap, "MADV_DONTNEED"), reason="no madvise here")
@pytest.mark.parametrize(("page_bytes", "pooled"), [(4096, [30, 8]), (16384, [30])])
def test_the_pool_of_dropped_tables_is_bounded_in_rows(monkeypatch, page_bytes, pooled):
    """Tables dropped in a burst (a large grammar evicting several) fill the pool up to
    `pool_rows` rows in all: a table over the room left keeps only what fits in whole pages (4
    rows of 1 KiB on x86; with 16 KiB pages the 10 rows left are no whole page), its other pages
    given back (they read as zeros again), and one that finds no room is not pooled."""
    monkeypatch.setattr(lexer_module._Memory, "page_bytes", page_bytes)
    monkeypatch.setattr(lexer_module._Memory, "pool", deque())
    monkeypatch.setattr(lexer_module._Memory, "max_rows", 32)
    monkeypatch.setattr(lexer_module._Memory, "pool_rows", 40)
    mappings = [mmap.mmap(-1, 64 * 1024, **lexer_module._PRIVATE) for _ in range(3)]
    for mapping in mappings:
        np.frombuffer(mapping, dtype=np.int32)[: 30 * 256] = 7
        memory = lexer_module._Memory(mapping, 30, 1024)  # rows of 32-bit states
        del memory  # as when its lexer is dropped
    pool = lexer_module._Memory.pool
    assert [(memory.mapping, memory.rows) for memory in pool] == list(zip(mappings, pooled, strict=False))
    if len(pooled) > 1:
        trimmed = np.frombuffer(mappings[1], dtype=np.int32).reshape(-1, 256)
        assert (trimmed[:8] == 7).all() and not trimmed[8:].any()


def test_the_bytes_of_the_lexers_maps_are_counted_as_they_grow(vocab_llama3):
    """`Lexer.nbytes` is read for every cached grammar at every compile, so it keeps a running
    count of its maps rather than summing them: the count equals the sum once all three are
    filled (start states, starts by byte, sparse rows of states of several lexemes)."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"enum": ["x", 2]}, "c": {}}}
    compiled = grammask.compile(Grammar.from_json_schema(schema), vocab_llama3)
    matcher = compiled.matcher()
    for text in [b'{"a', b'b": 2, ', b'"c": [1, {"d": "e"}, tr', b"ue]}"]:
        matcher.fill_bitmask(np.zeros((1, (vocab_llama3.size + 31) // 32), dtype=np.int32))
        assert matcher.advance_bytes(text)
    lexer = compiled.parser.lexer
    for terminals, state in list(lexer._starts.items()):
        if len(terminals) > 1:
            lexer.row(state)  # a state of several lexemes: its row is made from sparse rows
    assert lexer._starts and lexer._starts_by_byte and any(lexer._sparse_rows.values())
    summed = sum(150 + 16 * len(row[0]) for row in lexer._sparse_rows.values() if row)
    summed += sum(200 + bounds.nbytes + starts.nbytes for bounds, starts in lexer._starts_by_byte.values())
    summed += sum(100 + 8 * len(terminals) for terminals in lexer._starts)
    assert lexer._map_bytes == summed


def test_a_lexer_keeps_nothing_per_state_that_the_garbage_collector_scans(vocab_llama3):
    """A full garbage collection traverses every tracked container whole, and a long-running
    process keeps dozens of compiled grammars. A lexer of thousands of states keeps what it knows
    per state in arrays (and maps the collector stops tracking), so no container of it that the
    collector scans grows with its states. (A list of each state's lexemes, as long as the lexer,
    was a third of what a full collection scanned on MaskBench.)"""
    from grammask.compiler import CompiledGrammar

    names = [f"field_{i}" for i in range(60)]
    schema = {"type": "object", "properties": {n: {"type": ["string", "integer"]} for n in names}, "required": names}
    compiled = CompiledGrammar(Grammar.from_json_schema(schema), vocab_llama3)
    matcher = compiled.matcher()
    assert matcher.advance_bytes(b'{"field_0": "a", "field_1": 7, "fie')
    lexer = compiled.parser.lexer
    for k, is_lexeme in enumerate(compiled.parser.is_lexeme):
        if is_lexeme:
            lexer.single(k, 1)  # every lexeme's block of states, as a long decode would lay them
    assert lexer.n_states > 2000
    gc.collect()
    scanned = {name: len(gc.get_referents(value)) for name, value in vars(lexer).items() if gc.is_tracked(value)}
    assert max(scanned.values()) < lexer.n_states / 20, scanned


def test_a_lexer_crosses_from_16_to_32_bit_states_under_the_default_limit():
    """Four lexemes of 17,003 DFA states each: the fourth block goes past the 65,536 states that
    16-bit rows number. The default limit lets it (a MaskBench schema, detekt, needs 129,515
    states), and the table becomes 32-bit then, with every row laid before kept."""
    lowercase = rx.repeat(rx.char_class([(97, 122)]), 0, 17_000)
    dfas = [compile_regex(rx.concat(rx.literal(first), lowercase)) for first in "ABCD"]
    lexer = Lexer(dfas.__getitem__, DEFAULT_LIMITS, [()] * 4)
    assert DEFAULT_LIMITS.max_lexer_states > 1 << 16 and lexer.table.dtype == np.uint16
    bases = []
    for k, first in enumerate(b"ABCD"):
        bases.append(lexer.single(k, 0))
        assert lexer.step(lexer.start((k,)), first) == bases[k] + int(dfas[k].transitions[1, first])
        assert lexer.table.dtype == (np.uint16 if k < 3 else np.int32)
    assert lexer.n_states > 1 << 16
    for dfa, base in zip(dfas, bases, strict=True):
        transitions = dfa.transitions[1:].astype(np.int64)
        assert np.array_equal(lexer.table[base + 1 : base + dfa.n_states], np.where(transitions, transitions + base, 0))


def test_masks_in_threads_while_the_lexer_grows_and_widens(monkeypatch, vocab_llama3):
    """Threads sharing one compiled grammar walk it while its lexer grows (per-state arrays that
    double from 16 states, a table that moves from 16-bit to 32-bit rows past 256): every mask is
    the one a single thread computes on a compile of its own. Threads switch every microsecond, so
    rows computed by two threads at once (no lock in `Lexer.ensure`) show here. (The kernels,
    which run without the GIL, hold the lock too; what that guards against, a row read before it
    is written, needs a weaker memory order than x86's to show.)"""
    import sys
    import threading

    from grammask.compiler import CompiledGrammar

    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {}}}}
    grammar = Grammar.from_json_schema(schema)
    seeds = range(6)
    paths = {}
    for seed in seeds:  # each thread's tokens and masks, from a compile of its own
        tokens = _TokenRecorder()
        masks = [m._mask().copy() for m in random_walk(CompiledGrammar(grammar, vocab_llama3), 32, seed, (tokens,))]
        # (a walk that ran out of tokens has one mask more: its last, with no token after it)
        paths[seed] = list(zip(masks, tokens.taken, strict=False))
    monkeypatch.setattr(lexer_module, "_RESERVED_STATES", 256)
    monkeypatch.setattr(lexer_module, "_NARROW_STATES", 256)
    monkeypatch.setattr(lexer_module, "_FIRST_STATES", 16)
    shared = CompiledGrammar(grammar, vocab_llama3)
    errors: list[tuple[int, int]] = []
    barrier = threading.Barrier(len(seeds))

    def run(seed: int) -> None:
        matcher = shared.matcher()
        barrier.wait()
        for step, (mask, taken) in enumerate(paths[seed]):
            if not np.array_equal(matcher._mask(), mask) or not matcher.advance(taken):
                errors.append((seed, step))
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(seed,)) for seed in seeds]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert shared.parser.lexer.table.dtype == np.int32  # the table moved while the threads ran


class _TokenRecorder:
    """A twin for `random_walk` that keeps the tokens the walk takes."""

    def __init__(self) -> None:
        self.taken: list[int] = []

    def advance(self, token: int) -> bool:
        self.taken.append(token)
        return True
