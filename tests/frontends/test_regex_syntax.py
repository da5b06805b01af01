"""Regex syntax → IR: tables of what matches, what is unsupported and what is invalid, and
property tests against Python's `re` (full match and search) and the `regex` module (ECMA)."""

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from grammask.automata import compile_regex
from grammask.errors import GrammarError
from grammask.frontends.regex_syntax import parse_regex, parse_search_pattern


def accepts(pattern: str, text: str, flavor: str = "python") -> bool:
    return compile_regex(parse_regex(pattern, flavor=flavor)).matches(text.encode())


def searches(pattern: str, text: str, flavor: str = "ecma") -> bool:
    return compile_regex(parse_search_pattern(pattern, flavor=flavor)).matches(text.encode())


# -- tables ------------------------------------------------------------------------------------

VALID = [
    # (pattern, matches, non-matches), Python flavour, full match
    ("", [""], ["a"]),
    ("abc", ["abc"], ["ab", "abcd", "ABC"]),
    ("a|bc|", ["a", "bc", ""], ["b", "abc"]),
    ("a*b+c?", ["b", "aabbc", "abc"], ["", "ac", "abcc"]),
    ("a{3}", ["aaa"], ["aa", "aaaa"]),
    ("a{2,3}", ["aa", "aaa"], ["a", "aaaa"]),
    ("a{2,}", ["aa", "a" * 50], ["a"]),
    ("a{,2}", ["", "aa"], ["aaa"]),
    ("a{,}", ["", "aaaa"], ["b"]),
    ("a{}", ["a{}"], ["a"]),
    ("a{x}", ["a{x}"], ["a"]),
    ("a*?b+?c??d{1,2}?", ["bd", "abcdd"], ["abc"]),
    ("(ab)+", ["ab", "abab"], ["", "aba"]),
    ("(?:ab|cd)*", ["", "abcd", "cdab"], ["abc"]),
    ("(?P<year>\\d{4})-(?P<m>\\d\\d)", ["2024-01", "٢٠٢٤-٠١"], ["2024-1"]),
    ("[a-c]+", ["abcabc"], ["d", ""]),
    ("[^a-c]", ["d", "é", "\n"], ["a", "ab"]),
    ("[]a]", ["]", "a"], ["b"]),
    ("[^]a]", ["b"], ["]", "a"]),
    ("[-a]", ["-", "a"], ["b"]),
    ("[a-]", ["-", "a"], ["b"]),
    ("[\\d\\s]", ["5", " ", "\u3000", "٣"], ["a"]),
    ("[\\w-]", ["-", "é", "_"], ["!"]),
    ("[\\b]", ["\b"], ["b"]),
    ("[\\]\\\\]", ["]", "\\"], ["a"]),
    ("[é-ë]", ["é", "ê", "ë"], ["e", "ì"]),
    ("[😀-😂]", ["😁"], ["😃"]),
    (".", ["a", "é", "😀", "\r", "\u2028"], ["\n", ""]),
    ("(?s).", ["\n"], [""]),
    ("(?s:.)\\n.", ["\n\na"], ["\n\n\n"]),
    ("\\d", ["0", "٣", "𝟘"], ["a", "²", "½"]),
    ("\\D", ["a", "²"], ["0"]),
    ("\\w", ["a", "Z", "_", "é", "日", "²", "½"], ["-", " "]),
    ("\\W", ["-", " "], ["a"]),
    ("\\s", [" ", "\t", "\n", "\x1c", "\x85", "\u3000"], ["a", "\u200b"]),
    ("\\S", ["a"], [" "]),
    ("(?a)\\d\\w\\s", ["0a ", "9_\t"], ["٣a ", "0é ", "0a\u3000"]),
    ("(?a:\\w)\\w", ["aé"], ["éa"]),
    ("\\n\\t\\r\\f\\v\\a\\0", ["\n\t\r\f\v\a\0"], []),
    ("\\x41\\u00e9\\U0001F600", ["Aé😀"], []),
    ("\\101\\0101", ["A\x08" + "1"], []),
    ("\\N{EM DASH}", ["—"], ["-"]),
    ("\\.\\*\\+\\?\\(\\)\\[\\{\\|\\^\\$\\\\", [".*+?()[{|^$\\"], []),
    ("\\-\\#\\&\\~\\ \\é", ["-#&~ é"], []),
    ("]}", ["]}"], []),
    ("^abc$", ["abc"], ["abc\n"]),
    ("\\Aabc\\Z", ["abc"], ["abc\n"]),
    ("^a|^b$|c$", ["a", "b", "c"], ["ab"]),
    ("(^a|b)c", ["ac", "bc"], ["c"]),
    ("(?m)^a$", ["a"], ["a\n"]),
    ("(?x) a b # comment\n c", ["abc"], ["a b c"]),
    ("(?x)a\\ b[ ]c", ["a b c"], ["abc"]),
    ("(?x)a +", ["aaa"], ["a +"]),
    ("a(?#comment)b", ["ab"], []),
    ("(?u)\\w", ["é"], []),
    ("(a)(b)?", ["a", "ab"], ["b"]),
    ("[\\x00-\\x7f]+", ["abc\x00"], ["é"]),
    ("[\\ud800-\\udfff]", [], ["a"]),
    ("x[\\ud7ff-\\ue000]", ["x\ud7ff", "x\ue000"], ["x"]),
]


@pytest.mark.parametrize(("pattern", "good", "bad"), VALID)
def test_valid_python(pattern: str, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert accepts(pattern, text), (pattern, text)
        assert re.fullmatch(pattern, text), (pattern, text)  # the table itself agrees with `re`
    for text in bad:
        assert not accepts(pattern, text), (pattern, text)
        assert not re.fullmatch(pattern, text), (pattern, text)


VALID_ECMA = [
    ("\\d", ["0", "9"], ["٣", "a"]),
    ("\\w", ["a", "Z", "_", "0"], ["é", "-"]),
    ("\\W", ["é", "-"], ["a"]),
    ("\\s", [*" \t\n\r\v\f\xa0\ufeff\u2028\u3000\u1680"], ["\x1c", "\x85", "a"]),
    ("\\S", ["\x85", "a"], [" "]),
    (".", ["a", "é", "\x85"], ["\n", "\r", "\u2028", "\u2029"]),
    ("[^]", ["\n", "a"], ["", "ab"]),
    ("[]", [], ["", "a"]),
    ("a{,2}", ["a{,2}"], ["aa"]),
    ("a{2}", ["aa"], ["a{2}"]),
    ("(?<year>[0-9]{4})", ["2024"], ["202"]),
    ("\\u{1F600}\\u00e9\\x41", ["😀éA"], []),
    ("\\uD83D\\uDE00", ["😀"], []),
    ("\\cJ\\0", ["\n\0"], []),
    ("[\\d-z]", ["1", "-", "z"], ["y"]),
    ("\\/\\-", ["/-"], []),
    ("^a$|b", ["a", "b"], ["ab"]),
    ("(?s:.)", ["\n"], []),
]


@pytest.mark.parametrize(("pattern", "good", "bad"), VALID_ECMA)
def test_valid_ecma(pattern: str, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert accepts(pattern, text, "ecma"), (pattern, text)
    for text in bad:
        assert not accepts(pattern, text, "ecma"), (pattern, text)


UNSUPPORTED = [
    # (pattern, flavor, construct named in the message, position)
    ("(a)\\1", "python", "backreference", 3),
    ("(?P<n>a)(?P=n)", "python", "backreference", 8),
    ("(?<n>a)\\k<n>", "ecma", "backreference", 7),
    ("(a)\\1", "ecma", "backreference", 3),
    ("(a(?=b))", "python", "lookahead inside a group", 2),
    ("x|(b(?!c))*", "ecma", "lookahead inside a group", 4),
    ("a(?=^b)", "ecma", "start anchor inside a lookahead", 4),
    ("(?<=a)b", "python", "lookbehind", 0),
    ("(?<!a)b", "ecma", "lookbehind", 0),
    ("\\bword", "python", "word boundary", 0),
    ("a\\B", "ecma", "word boundary", 1),
    ("a*+", "python", "possessive", 1),
    ("a{1,2}+", "python", "possessive", 1),
    ("(?>ab)", "python", "atomic group", 0),
    ("(?i)abc", "python", "case-insensitive", 0),
    ("a(?i:b)", "python", "case-insensitive", 1),
    ("(?(1)a|b)", "python", "conditional", 0),
    ("\\p{L}", "ecma", "Unicode property", 0),
    ("a^b", "python", "start anchor", 1),
    ("a$b", "python", "end anchor", 1),
    ("(a$)b", "ecma", "end anchor", 2),
    ("b(^a)", "ecma", "start anchor", 2),
    ("(^a)*", "python", "anchor inside a repeated group", 1),
    ("(a$)+", "python", "anchor inside a repeated group", 2),
]


@pytest.mark.parametrize(("pattern", "flavor", "construct", "position"), UNSUPPORTED)
def test_unsupported(pattern: str, flavor: str, construct: str, position: int) -> None:
    with pytest.raises(GrammarError, match="unsupported regex construct: .*" + construct) as info:
        parse_regex(pattern, flavor=flavor)
    assert info.value.position == position
    assert f"at position {position}" in str(info.value)


INVALID = [
    ("(ab", "python"),
    ("ab)", "python"),
    ("ab)", "ecma"),
    ("[z-a]", "python"),
    ("[z-a]", "ecma"),
    ("[abc", "python"),
    ("*a", "python"),
    ("a|+", "ecma"),
    ("a**", "python"),
    ("a{2}{3}", "ecma"),
    ("{2}", "ecma"),
    ("^*", "python"),
    ("a{3,2}", "python"),
    ("\\q", "python"),
    ("\\q", "ecma"),
    ("\\x4", "python"),
    ("\\u12", "ecma"),
    ("\\U00110000", "python"),
    ("\\N{NO SUCH CHARACTER}", "python"),
    ("\\", "python"),
    ("[\\d-z]", "python"),
    ("(?P<1a>x)", "python"),
    ("(?P<n>x)(?P<n>y)", "python"),
    ("(?<n>x)", "python"),
    ("(?P<n>x)", "ecma"),
    ("a(?s)b", "python"),
    ("(?s)a", "ecma"),
    ("(?L)a", "python"),
    ("(?au)a", "python"),
    ("(?-a:x)", "python"),
    ("(?q)", "python"),
    ("a*+", "ecma"),
    ("[\\8]", "python"),
    ("\\777", "python"),
]


@pytest.mark.parametrize(("pattern", "flavor"), INVALID)
def test_invalid(pattern: str, flavor: str) -> None:
    with pytest.raises(GrammarError, match="^invalid regex syntax: ") as info:
        parse_regex(pattern, flavor=flavor)
    assert info.value.position is not None
    if flavor == "python":
        with pytest.raises(re.error):
            re.compile(pattern)


def test_error_reports_line_and_column() -> None:
    with pytest.raises(GrammarError, match=r"at position 7 \(line 2, column 2\)"):
        parse_regex("(?x)a\nb(?<=c)")


def test_unknown_flavor_is_rejected() -> None:
    with pytest.raises(ValueError, match="flavor"):
        parse_regex("a", flavor="perl")  # type: ignore[arg-type]


SEARCH = [
    # (pattern, flavor, containing, not containing)
    ("b", "ecma", ["b", "abc", "a\nb"], ["", "a"]),
    ("^a", "ecma", ["a", "ab"], ["ba", "\na"]),
    ("a$", "ecma", ["a", "ba"], ["ab", "a\n"]),
    ("a$", "python", ["ba", "ba\n"], ["ab", "a\n\n"]),
    ("^a|b$", "ecma", ["ax", "xb", "b"], ["xa", "bx"]),
    ("^(a|b)$", "ecma", ["a", "b"], ["ab", "xa"]),
    ("(^a|b)c", "ecma", ["ac", "xbcx"], ["xac"]),
    ("^$", "ecma", [""], ["a"]),
    ("(?m)^a$", "python", ["x\na\ny", "a"], ["xa\n", "ab"]),
    ("\\Aa\\Z", "python", ["a"], ["a\n"]),
    ("", "ecma", ["", "anything"], []),
]


@pytest.mark.parametrize(("pattern", "flavor", "good", "bad"), SEARCH)
def test_search_pattern(pattern: str, flavor: str, good: list[str], bad: list[str]) -> None:
    for text in good:
        assert searches(pattern, text, flavor), (pattern, text)
    for text in bad:
        assert not searches(pattern, text, flavor), (pattern, text)


# Lookaheads in the top-level sequence: intersections (differences) with the rest of the text.
LOOKAHEADS = [
    "^(?=.*[A-Z])(?=.*[0-9]).{8,}$",
    "^(?!org[.]bukkit[.])[a-z.]+$",
    "^(?!^lucene[.]|builtin[.]|mongodb[.]).*",
    "^(?!.*://)(?=.{1,10}$)[a-z.:/]+$",
    "a(?=b)",
    "x(?!y)",
    "(?=ab)a.",
    "^a(?=bc)b(?!x)c",
    "q|^(?!z)",
]
LOOKAHEAD_TEXTS = [
    "",
    "a",
    "ab",
    "ac",
    "abc",
    "abcx",
    "xaby",
    "x",
    "xy",
    "xz",
    "xyx",
    "xyy",
    "q",
    "z",
    "zq",
    "Abcdefg1",
    "12345678A",
    "abcdefg1",
    "ABCDEFGH",
    "Ab1",
    "org.foo",
    "com.x",
    "org.bukkit.x",
    "lucene",
    "lucene.x",
    "builtin.y",
    "a.b",
    "a://b",
    "abcdefghijk",
    "a.b.c.d.e.",
]


def _search_and_full_match_agree_with_re(pattern: str, texts: list[str]) -> None:
    search = compile_regex(parse_search_pattern(pattern, flavor="python"))
    whole = compile_regex(parse_regex(pattern))
    for text in texts:
        assert search.matches(text.encode()) == (re.search(pattern, text) is not None), (pattern, text)
        assert whole.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize("pattern", LOOKAHEADS)
def test_lookaheads_agree_with_re(pattern: str) -> None:
    _search_and_full_match_agree_with_re(pattern, LOOKAHEAD_TEXTS)


def test_search_rejects_inner_anchors() -> None:
    with pytest.raises(GrammarError, match="unsupported regex construct: start anchor") as info:
        parse_search_pattern("a(^b)")
    assert info.value.position == 2


# -- property tests ----------------------------------------------------------------------------

# Characters that exercise every UTF-8 length, Unicode digits/letters/spaces, and line terminators.
CHARS = "ab_0-. \n\r\t\x85\xa0é٣²日\u2028\u3000😀𝟘"
TEXT = st.text(st.sampled_from(CHARS), max_size=8)


def _class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[&~|" else c


@st.composite
def char_classes(draw: st.DrawFn, shorthands: tuple[str, ...]) -> str:
    items, negate = [], draw(st.booleans())
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["char", "range", "shorthand"] if shorthands else ["char", "range"]
        if negate and any(item in shorthands for item in items):
            kinds.remove("shorthand")  # `[^\W\S]` would match nothing at all
        kind = draw(st.sampled_from(kinds))
        if kind == "char":
            items.append(_class_char(draw(st.sampled_from(CHARS))))
        elif kind == "range":
            a, b = sorted(draw(st.lists(st.sampled_from(CHARS), min_size=2, max_size=2)))
            items.append(f"{_class_char(a)}-{_class_char(b)}")
        else:
            items.append(draw(st.sampled_from(shorthands)))
    return "[" + ("^" if negate else "") + "".join(items) + "]"


def _leaf(pattern: str) -> tuple[str, str | None]:
    """A one-character pattern with a character of `CHARS` it matches (None when there is none)."""
    return pattern, next((c for c in CHARS if re.fullmatch(pattern, c)), None)


def _join(parts: list[tuple[str, str | None]]) -> tuple[str, str | None]:
    examples = [e for _, e in parts]
    return "".join(p for p, _ in parts), None if None in examples else "".join(examples)


def _choice(parts: list[tuple[str, str | None]]) -> tuple[str, str | None]:
    return "(?:" + "|".join(p for p, _ in parts) + ")", next((e for _, e in parts if e is not None), None)


_QUANTIFIERS = {"*": 2, "+": 1, "?": 1, "{2}": 2, "{0,2}": 0, "{1,3}": 3, "{2,}": 3, "*?": 0, "{1,2}?": 1}


def _repeat(part: tuple[str, str | None], quantifier: str) -> tuple[str, str | None]:
    count = _QUANTIFIERS[quantifier]
    example = "" if count == 0 else None if part[1] is None else part[1] * count
    return f"(?:{part[0]}){quantifier}", example


def patterns(shorthands: tuple[str, ...], dot: bool) -> st.SearchStrategy[tuple[str, str | None]]:
    """Patterns from a small grammar of regex trees, each with a string it fully matches (or None)."""
    singles = st.sampled_from(CHARS).map(re.escape)
    if shorthands or dot:
        singles = singles | st.sampled_from(shorthands + ((".",) if dot else ()))
    leaves = (singles | char_classes(shorthands)).map(_leaf)

    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(_join),
            st.lists(inner, min_size=2, max_size=3).map(_choice),
            st.tuples(inner, st.sampled_from(sorted(_QUANTIFIERS))).map(lambda t: _repeat(*t)),
            inner.map(lambda t: (f"({t[0]})", t[1])),
        )

    return st.recursive(leaves, extend, max_leaves=6)


PY_SHORTHANDS = ("\\d", "\\w", "\\s", "\\D", "\\W", "\\S")


def _check_against_re(pattern: str, texts: list[str]) -> None:
    dfa = compile_regex(parse_regex(pattern))
    for text in texts:
        assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None), (pattern, text)


FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(patterns(PY_SHORTHANDS, dot=True), st.lists(TEXT, max_size=6))
def test_full_match_agrees_with_re(case: tuple[str, str | None], texts: list[str]) -> None:
    pattern, example = case
    _check_against_re(pattern, texts + [example] * (example is not None))


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(PY_SHORTHANDS, dot=True), st.lists(TEXT, max_size=6))
def test_full_match_agrees_with_re_many(case: tuple[str, str | None], texts: list[str]) -> None:
    pattern, example = case
    _check_against_re(pattern, texts + [example] * (example is not None))


@FAST
@given(
    patterns(PY_SHORTHANDS, dot=True),
    st.sampled_from(["", "^", "\\A"]),
    st.sampled_from(["", "$", "\\Z"]),
    st.booleans(),
    st.lists(TEXT, max_size=6),
)
def test_search_agrees_with_re(
    case: tuple[str, str | None], lead: str, trail: str, split: bool, texts: list[str]
) -> None:
    body, example = case
    pattern = f"{lead}{body}|x{trail}" if split else f"{lead}{body}{trail}"
    dfa = compile_regex(parse_search_pattern(pattern, flavor="python"))
    extra = [] if example is None else [example, f"y{example}\n", f"{example}z"]
    for text in texts + extra:
        assert dfa.matches(text.encode()) == (re.search(pattern, text) is not None), (pattern, text)


@FAST
@given(patterns(("\\d", "\\w", "\\D", "\\W"), dot=False), st.lists(TEXT, max_size=6))
@example(("(?:[^a]|[^b])", "b"), [])
def test_ecma_agrees_with_re_ascii(case: tuple[str, str | None], texts: list[str]) -> None:
    # Without `.` and `\s`, ECMA semantics are those of Python's `re` in ASCII mode. (Not the
    # `regex` module's: regex 2026.5.9 finds no full match of `(?:[^a]|[^b])` in "b".)
    pattern, example = case
    dfa = compile_regex(parse_regex(pattern, flavor="ecma"))
    for text in texts + [example] * (example is not None):
        expected = re.fullmatch(pattern, text, flags=re.ASCII) is not None
        assert dfa.matches(text.encode()) == expected, (pattern, text)


@FAST
@given(
    patterns(PY_SHORTHANDS, dot=True),
    patterns(PY_SHORTHANDS, dot=True),
    st.sampled_from(["=", "!"]),
    st.booleans(),
    st.lists(TEXT, max_size=6),
)
def test_lookaheads_agree_with_re_on_random_patterns(ahead, rest, kind, anchored, texts) -> None:
    (a, a_example), (b, b_example) = ahead, rest
    pattern = f"{'^' if anchored else ''}(?{kind}{a}){b}"
    _search_and_full_match_agree_with_re(pattern, texts + [e for e in (a_example, b_example) if e is not None])
