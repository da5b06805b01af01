"""`rx.Difference` in the automata: alone (one subset construction over both sides) and laid into
a larger tree (its DFA as NFA states), against `re` on both sides."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.frontends.regex_syntax import parse_regex
from grammask.ir import regex as rx
from tests.automata.test_compile_regex import minimal_state_count, reachable_count
from tests.frontends.test_regex_syntax import PY_SHORTHANDS, TEXT, patterns

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _in(pattern: str, text: str) -> bool:
    return re.fullmatch(pattern, text) is not None


@FAST
@given(
    patterns(PY_SHORTHANDS, dot=True),
    patterns(PY_SHORTHANDS, dot=True),
    st.lists(TEXT, max_size=8),
    st.sampled_from(["alone", "before", "after", "choice", "repeat"]),
)
def test_difference_matches_left_and_not_right(left, right, texts, where) -> None:
    (lp, le), (rp, re_) = left, right
    node = rx.difference(parse_regex(lp), parse_regex(rp))
    # The same difference in the places a lexeme may hold one; `check` is membership by `re`.
    tail = rx.literal("#")
    tree, check = {
        "alone": (node, lambda t: _in(lp, t) and not _in(rp, t)),
        "before": (rx.concat(node, tail), lambda t: t.endswith("#") and _in(lp, t[:-1]) and not _in(rp, t[:-1])),
        "after": (rx.concat(tail, node), lambda t: t.startswith("#") and _in(lp, t[1:]) and not _in(rp, t[1:])),
        "choice": (rx.alt(node, tail), lambda t: t == "#" or (_in(lp, t) and not _in(rp, t))),
        "repeat": (rx.repeat(rx.concat(tail, node), 1, 2), None),
    }[where]
    dfa = compile_regex(tree)
    samples = texts + [e for e in (le, re_) if e is not None]
    if check is None:  # one or two copies of "#" followed by a member
        members = [t for t in samples if _in(lp, t) and not _in(rp, t)]
        for text in samples:
            assert dfa.matches(("#" + text).encode()) == (text in members)
        for a in members[:3]:
            for b in members[:3]:
                assert dfa.matches(f"#{a}#{b}".encode())
    else:
        decorated = samples + ["#" + t for t in samples] + [t + "#" for t in samples]
        for text in decorated:
            assert dfa.matches(text.encode()) == check(text), (tree, text)
    assert dfa.n_states == 2 or (dfa.live[1:].all() and reachable_count(dfa) == dfa.n_states)


def test_any_key_but_the_declared_ones() -> None:
    any_string = rx.star(rx.ANY_CHAR)
    keys = rx.difference(any_string, rx.words(["name", "age", "née", ""]))
    dfa = compile_regex(keys)
    for text in ["nam", "names", "ag", "agee", "x", "ne", "nèe", "née!", "😀"]:
        assert dfa.matches(text.encode()), text
    for text in ["name", "age", "née", ""]:
        assert not dfa.matches(text.encode()), text
    assert minimal_state_count(dfa) == dfa.n_states


def test_an_empty_difference_accepts_nothing() -> None:
    dfa = compile_regex(rx.difference(parse_regex("a|b"), parse_regex("[ab]")))
    assert dfa.is_empty and dfa.n_states == 2
    inner = compile_regex(rx.concat(rx.literal("x"), rx.difference(parse_regex("a|b"), parse_regex("[ab]"))))
    assert inner.is_empty


def test_nested_differences() -> None:
    # (a-z words but "ab") but "abc"-prefixed ones: exercises a difference inside a difference.
    inner = rx.difference(parse_regex("[a-c]+"), rx.literal("ab"))
    node = rx.difference(inner, parse_regex("abc.*"))
    dfa = compile_regex(node)
    for text in ["a", "abb", "ba", "ab", "abc", "abca", "cab"]:
        expected = bool(re.fullmatch("[a-c]+", text)) and text != "ab" and not text.startswith("abc")
        assert dfa.matches(text.encode()) == expected, text
