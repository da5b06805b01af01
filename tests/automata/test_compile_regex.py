"""`compile_regex`: minimal byte DFAs over UTF-8, limits, speed, caching."""

import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammask.automata.compile as compile_module
from grammask.automata import START, ByteDFA, compile_regex
from grammask.automata.repeat import chain_dfa
from grammask.errors import GrammarError
from grammask.frontends.regex_syntax import parse_regex
from grammask.ir import regex as rx
from grammask.limits import Limits


def minimal_state_count(dfa: ByteDFA) -> int:
    """States of the minimal equivalent DFA (Moore's refinement), counting the dead state."""
    block = dfa.accepting.astype(np.int64)
    count = 0
    while True:
        signature = np.column_stack([block, block[dfa.transitions]])
        _, block = np.unique(signature, axis=0, return_inverse=True)
        block = block.ravel()
        if block.max() + 1 == count:
            return count
        count = int(block.max()) + 1


def reachable_count(dfa: ByteDFA) -> int:
    seen, frontier = {START}, [START]
    while frontier:
        nxt = set(np.unique(dfa.transitions[frontier]).tolist()) - seen
        seen |= nxt
        frontier = sorted(nxt)
    return len(seen | {0})


#: How much larger than minimal an automaton the pipeline does not minimise may be, in these tests
#: (3.9% on MaskBench's lexemes; a blow-up, such as unshared continuations, is many times larger).
NEAR_MINIMAL = 1.25

MINIMAL = [
    "abc",
    "a|b|c",
    "(a|ab)(c|bcd)(d*)",
    "[a-z]+@[a-z]+\\.(com|org)",
    "\\d{2,4}",
    "(?s).*",
    ".*",
    '[^"\\\\]{0,20}',
    "\\w+é?",
    "(é|e)(😀|:\\))*",
    "(a|b)*a(a|b){3}",
    "x?y?z?",
    "[\\u0800-\\uffff]{2}",
]


@pytest.mark.parametrize("pattern", MINIMAL)
def test_dfa_is_trim_and_near_minimal(pattern: str) -> None:
    """Trim exactly (every state reachable, every state but the dead one can accept); minimal up to
    the few states the subset construction leaves where it is not minimised."""
    dfa = compile_regex(parse_regex(pattern))
    assert dfa.n_states <= NEAR_MINIMAL * minimal_state_count(dfa)
    assert reachable_count(dfa) == dfa.n_states
    assert dfa.live[1:].all() and not dfa.live[0]
    assert not dfa.transitions[0].any() and not dfa.accepting[0]


def test_conventions_and_small_cases() -> None:
    nothing = compile_regex(rx.NOTHING)
    assert nothing.n_states == 2 and nothing.is_empty
    surrogates_only = compile_regex(rx.char_class([(0xD800, 0xDFFF)]))
    assert surrogates_only.n_states == 2 and surrogates_only.is_empty
    empty = compile_regex(rx.EMPTY)
    assert empty.matches(b"") and not empty.matches(b"a") and empty.n_states == 2
    # Minimal sizes are known exactly: any Unicode scalar value needs start, final, three
    # "n continuation bytes left" states and the E0/ED/F0/F4 lead-byte states, plus dead.
    assert compile_regex(rx.ANY_CHAR).n_states == 10


def test_results_are_cached() -> None:
    node = parse_regex("[a-f0-9]{8}-cache-test")
    assert compile_regex(node) is compile_regex(node)
    assert compile_regex(node) is not compile_regex(node, limits=Limits(max_dfa_states=999))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=12))
def test_invalid_utf8_is_never_accepted(data: bytes) -> None:
    dfa = compile_regex(parse_regex("(?s).*"))
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert dfa.matches(data) == valid


@pytest.mark.parametrize(
    "data",
    [
        b"\xc0\x80",
        b"\xc1\xbf",
        b"\xe0\x80\x80",
        b"\xe0\x9f\xbf",
        b"\xed\xa0\x80",
        b"\xed\xbf\xbf",
        b"\xf0\x80\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80",
        b"\xff",
        b"\x80",
        b"\xe2\x82",
        b"a\xc3",
    ],
)
def test_overlong_surrogate_and_truncated_encodings_are_rejected(data: bytes) -> None:
    assert not compile_regex(parse_regex("(?s).*")).matches(data)
    assert not compile_regex(parse_regex("[^a]*")).matches(data)


@given(
    st.lists(st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 0x3000)), min_size=1, max_size=4),
    st.lists(st.integers(0, 0x10FFFF), max_size=30),
)
@settings(max_examples=60, deadline=None)
def test_class_accepts_exactly_its_code_points(spans: list[tuple[int, int]], probes: list[int]) -> None:
    ranges = [(lo, min(lo + width, 0x10FFFF)) for lo, width in spans]
    dfa = compile_regex(rx.char_class(ranges))
    probes += [c + d for r in ranges for c in r for d in (-1, 0, 1) if 0 <= c + d <= 0x10FFFF]
    for cp in probes:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        assert dfa.matches(chr(cp).encode()) == any(lo <= cp <= hi for lo, hi in ranges), hex(cp)


def test_tree_size_limit() -> None:
    with pytest.raises(GrammarError, match=r"limits.max_regex_size=100\b"):
        compile_regex(parse_regex("a{1000}"), limits=Limits(max_regex_size=100))


def _cpu_seconds(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def test_state_limit_raises_quickly() -> None:
    node = parse_regex("(a|b)*a(a|b){20}")  # the minimal DFA has 2**21 states
    limits = Limits(max_dfa_states=1000)

    def attempt() -> None:
        with pytest.raises(GrammarError, match=r"limits.max_dfa_states=1000\b"):
            compile_regex(node, limits=limits)

    assert _cpu_seconds(attempt) < 0.5


def test_byte_expansion_counts_against_the_state_limit() -> None:
    # 301 character states, but each needs Unicode \w's ~300-state UTF-8 trie.
    with pytest.raises(GrammarError, match="max_dfa_states=20000"):
        compile_regex(parse_regex("\\w{1,300}"))


@pytest.mark.parametrize(
    ("pattern", "states"),
    [("[0-9]{1,1000}", 1002), ("\\d{1,1000}", 22002), ('[^"]{0,5000}', 40002), ('"[^"\\\\]{0,5000}"', 40004)],
)
def test_long_bounded_repeats_compile_without_blow_up(pattern: str, states: int) -> None:
    node = parse_regex(pattern)
    limits = Limits(max_dfa_states=50_000)
    assert _cpu_seconds(lambda: compile_regex(node, limits=limits)) < 2.0  # ~0.1-0.2 s measured
    dfa = compile_regex(node, limits=limits)
    assert dfa.n_states == states
    body = "7" * 1000 if "1000" in pattern else "x" * 5000
    text = f'"{body}"' if pattern.startswith('"') else body
    assert dfa.matches(text.encode())
    assert not dfa.matches((text + "7x").encode())


def test_nested_repeats_are_flattened() -> None:
    dfa = compile_regex(parse_regex("(?:a?){5000}(?:(?:b+){2,3}){2}"), limits=Limits(max_dfa_states=50_000))
    assert dfa.n_states == 5000 + 4 + 2
    assert dfa.matches(b"a" * 5000 + b"bbbb") and not dfa.matches(b"a" * 5001 + b"bbbb")
    assert not dfa.matches(b"bbb")


TYPICAL = [
    "[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}",
    "\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])",
    "\\+?1?[ -]?\\(?\\d{3}\\)?[ -]?\\d{3}[ -]?\\d{4}",
    '"[^"\\\\]{0,100}"',
]


@pytest.mark.parametrize("pattern", TYPICAL)
def test_typical_patterns_compile_fast(pattern: str) -> None:
    from grammask.automata.compile import _compile
    from grammask.limits import DEFAULT_LIMITS

    node = parse_regex(pattern)
    compile_regex(node)  # warm the Unicode tables and templates

    def fresh() -> None:
        _compile(node, DEFAULT_LIMITS)  # uncached

    # ~1-3 ms each measured; the bound is loose because the test machine is shared.
    assert min(_cpu_seconds(fresh) for _ in range(5)) < 0.02


#: Items a bounded repeat may chain (closed: one accepting state with no way on, a start that is
#: never re-entered) and some it may not, each with texts it matches.
REPEATED = st.sampled_from(
    [
        ('(?:[^"\\\\]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})', ["a", "é", "😀", '\\"', "\\u00e9"]),
        ("[0-9]", ["0", "7"]),
        ("\\d", ["٣", "5"]),
        ("(?:ab|c)", ["ab", "c"]),
        ("x[0-9]{2}", ["x12"]),
        ("(?:a|ab)", ["a", "ab"]),  # not closed: an accepting state goes on
        ("(?:ab)*c", ["c", "abc"]),  # not closed: the start is re-entered
        ("a?", ["", "a"]),  # not closed: the start accepts
    ]
)


@settings(max_examples=150, deadline=None)
@given(REPEATED, st.integers(0, 5), st.integers(0, 4), st.data())
def test_bounded_repeats_chained_equal_the_pipeline(item, lo, extra, data) -> None:
    """A bounded repeat built as a chain of the item's copies is the minimal DFA (no larger than the
    one the character pipeline builds) and matches what `re` matches."""
    pattern, examples = item
    hi = lo + extra
    node = parse_regex(f"(?:{pattern}){{{lo},{hi}}}")
    chained = compile_module._compile(node, Limits())
    original = compile_module.chain_dfa
    compile_module.chain_dfa = lambda *args: None
    try:
        built = compile_module._compile(node, Limits())
    finally:
        compile_module.chain_dfa = original
    assert chained.n_states == minimal_state_count(chained) <= built.n_states
    texts = ["".join(data.draw(st.lists(st.sampled_from(examples), max_size=hi + 2))) for _ in range(6)]
    texts += [text[:-1] for text in texts if text]
    for text in texts:
        expected = re.fullmatch(f"(?:{pattern}){{{lo},{hi}}}", text) is not None
        assert chained.matches(text.encode()) == expected, (pattern, lo, hi, text)


def test_only_closed_items_are_chained() -> None:
    def chain(item: str):
        return chain_dfa(compile_regex(parse_regex(item)), 1, 3, 1000)

    assert chain("[0-9]") is not None and chain('(?:[^"\\\\]|\\\\u[0-9a-f]{4})') is not None
    assert chain("(?:a|ab)") is None and chain("(?:ab)*c") is None and chain("a?") is None
    assert chain_dfa(compile_regex(parse_regex("[0-9]")), 1, 3, 4) is None  # 5 states


def _pipeline_runs(node: rx.RegexNode) -> list[int]:
    """Sizes of the nodes the character pipeline builds while `node` compiles (uncached)."""
    runs: list[int] = []
    original = compile_module._char_dfa

    def counted(builder, limits):
        runs.append(builder.root.size)
        return original(builder, limits)

    compile_module._char_dfa = counted
    try:
        compile_module._compile(node, Limits())
    finally:
        compile_module._char_dfa = original
    return runs


def test_optional_members_before_the_closing_brace_are_joined() -> None:
    """`(ws , ws "b": 1 (ws , ws "c": 2)?)? ws }`: each optional member starts with the `ws` that
    follows it, which no join can cross; rewritten as `ws (, ws "b": 1 ws (, ws "c": 2 ws)?)? }`,
    the lexeme is joined from its parts without the pipeline."""
    ws, number = " {0,3}", "[0-9]+"
    pattern = f'\\{{{ws}"a":{ws}{number}(?:{ws},{ws}"b":{ws}{number}(?:{ws},{ws}"c":{ws}{number})?)?{ws}\\}}'
    node = parse_regex(pattern)
    assert _pipeline_runs(node) == [] and _pipeline_runs(parse_regex("[a-z]*a")) != []
    dfa = compile_module._compile(node, Limits())
    texts = ['{"a":1}', '{ "a": 12 , "b":3 }', '{"a":1,"b":2,"c":3  }', '{"a":1,"c":2}', '{"a":1,}', '{"a":1 "b":2}']
    for text in texts:
        assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), text


def test_a_large_made_piece_sends_the_whole_lexeme_through_the_pipeline_once() -> None:
    """After the rewrite, `[a-z]{0,300} {0,2} {0,3}` cannot be joined (a space may end either
    part): rather than determinise that piece and then the whole, the pipeline builds the whole."""
    pattern = "b(?: {0,3}[a-z]{0,300} {0,2})? {0,3}"
    node = parse_regex(pattern)
    assert _pipeline_runs(node) == [node.size]
    dfa = compile_regex(node)
    for text in ["b", "b  ", "b abc  ", "b" + "x" * 300 + "     ", "b" + "x" * 301, "b abc      "]:
        assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), text


def test_deeply_nested_optionals_compile_without_recursion() -> None:
    node = rx.literal("z")
    for _ in range(3000):
        node = rx.optional(rx.concat(rx.literal("a"), node))
    dfa = compile_regex(node)
    assert dfa.matches(b"a" * 3000 + b"z") and dfa.matches(b"aa") and dfa.matches(b"")
    assert not dfa.matches(b"aaz") and not dfa.matches(b"a" * 3001) and not dfa.matches(b"z")


def test_a_subset_automaton_too_large_to_expand_is_minimised_first() -> None:
    """A search (`.*` around the pattern) makes a subset automaton many times its minimal size,
    over the byte state limit once expanded: it is minimised and expanded again."""
    from grammask.frontends.regex_syntax import parse_search_pattern

    node = parse_search_pattern("(?:a\\w(?:\\w){1,3}){1,3}", flavor="python")
    calls: list[int] = []
    original = compile_module.minimise

    def counted(rows, accepting):
        calls.append(len(rows))
        return original(rows, accepting)

    compile_module.minimise = counted
    try:
        dfa = compile_module._compile(node, Limits())
    finally:
        compile_module.minimise = original
    assert calls and dfa.n_states <= NEAR_MINIMAL * minimal_state_count(dfa)
    for text in ["xaaaz", "aa", "a_b", "a" * 12 + "!", "é"]:
        assert dfa.matches(text.encode()) == (re.search("(?:a\\w(?:\\w){1,3}){1,3}", text) is not None), text
