"""Lark front-end: real grammars, each piece of the supported subset, and clear errors for the rest."""

from __future__ import annotations

import re

import pytest

from grammask import Grammar
from grammask.engine.recognize import accepts, accepts_prefix
from grammask.errors import GrammarError
from grammask.frontends.lark import COMMON_TERMINALS, grammar_from_lark
from grammask.ir import grammar as g
from grammask.ir import regex as rx

CALCULATOR = r"""
// the calculator of Lark's examples
?start: sum
?sum: product
    | sum "+" product   -> add
    | sum "-" product   -> sub
?product: atom
    | product ("*" | "/") atom
?atom: NUMBER | "-" atom | NAME | "(" sum ")"
NAME: /[a-z_]\w*/
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
"""

JSON = r"""
?start: value
?value: object
      | array
      | string
      | SIGNED_NUMBER      -> number
      | "true"             -> true
      | "false"            -> false
      | "null"             -> null
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""

# (grammar, texts it accepts, texts it rejects)
CASES = [
    (CALCULATOR, ["1+2", " 1 + 2 * ( x - 3 ) ", "1.5e3*x2 ", "--4", "a/b/c"], ["1 +", "1 2", "", "(1", "X"]),
    (
        JSON,
        ['{"a": [1, -2.5e3, true, null], "b": {}}', " [ ] ", '"q\\"uote"', "\n{\n}\n", "-0.5"],
        ['{"a" 1}', "[1,]", '"a\nb"', "tru e", '"\\"', "{,}"],
    ),
    # literals, ranges, optional brackets, groups and repetitions
    (
        'start: "a".."c" ["-"] ("x" | "yz")+ DIGITS?\nDIGITS: "0".."9"~2..3',
        ["a-x", "cyzx12", "bx123"],
        ["d-x", "a-", "ax1", "ax1234"],
    ),
    ('start: "ab"~3', ["ababab"], ["abab", "abababab"]),
    ('start: ("x" "y"?)* "!"', ["!", "xyx!", "xxx!"], ["y!", "x"]),
    # terminals built from terminals, priorities, modifiers and underscores
    (
        'start: _WORD ("," _WORD)*\n_WORD.2: LETTER+\nLETTER: "a".."z"\n!_keep.-1: "k"',
        ["abc", "a,bc,d"],
        ["a,", ",a", "A"],
    ),
    # string escapes as Lark reads them: \n, \t, \\, \", \x, \u; other backslashes stay
    (r'start: "\n\t\\\"\x41\u00e9\d"', ['\n\t\\"Aé\\d'], ['\n\t\\"Aé\n']),
    # regexps: escapes, the s and x flags, an escaped slash
    (
        r"start: /\d+(\.\d+)?/ SEP /a.b/s SEP /a.b/" + '\nSEP: "|"',
        ["1|a\nb|a-b", "1.25|axb|acb"],
        ["1.|axb|acb", "1|axb|a\nb"],
    ),
    ("start: / a b+ # letters\n  [0-9] /x", ["ab7", "abbb0"], ["a b7", "ab"]),
    (r"start: /a\/b/", ["a/b"], ["a\\/b"]),
    # the ignored terminal goes between terminals, never inside one
    ('start: "ab" NAME\nNAME: /[a-z]+/\n%ignore " "', ["ab cd", "  ab  cd ", "abcd"], ["a b cd", "ab c d"]),
    # several %ignore lines, and a literal ignored
    ('start: "x"+\n%ignore " "\n%ignore /#[^\\n]*\\n/', ["x x", "x #c\n x", "x#\n"], ["x#", "x y"]),
    # rules spread over lines with '|' continuations, and brackets across lines
    ('start: "a"\n     | "b" (\n  "c"\n  | "d"\n)\n', ["a", "bc", "bd"], ["b", "ac"]),
    # left and right recursion
    ('start: start "+" "1" | "1"', ["1", "1+1+1"], ["+1", "1+"]),
]


@pytest.mark.parametrize("source, good, bad", CASES)
def test_language(source, good, bad):
    grammar = grammar_from_lark(source)
    for text in good:
        assert accepts(grammar, text.encode()), f"should accept {text!r}"
    for text in bad:
        assert not accepts(grammar, text.encode()), f"should reject {text!r}"


def test_case_insensitive_literal_matches_like_python_re():
    grammar = grammar_from_lark('start: "select"i " " "k"i')
    for text in ["select k", "SELECT K", "SeLeCt k", "ſelect \u212a", "selec k", "select  k", "select x"]:
        assert accepts(grammar, text.encode()) == bool(re.fullmatch("select k", text, re.IGNORECASE)), text


def test_ir_is_built_from_trees():
    grammar = grammar_from_lark('start: "a" B\nB: "b".."d"+')
    assert grammar.rules == {"start": g.lex(rx.concat(rx.literal("a"), rx.plus(rx.char_class([(98, 100)]))))}


def test_special_tokens():
    grammar = grammar_from_lark("start: <|python_tag|> NAME <[128009]>\nNAME: /[a-z]+/")
    assert grammar.rules["start"] == g.seq(
        g.token("<|python_tag|>"), g.lex(rx.plus(rx.char_class([(97, 122)]))), g.token(128009)
    )
    assert not accepts(grammar, b"<|python_tag|>abc")


def test_imports():
    grammar = grammar_from_lark(
        "start: N (SEP N)*\n%import common (INT, WS_INLINE)\n%import common.INT -> N\n%import common.WS -> SEP"
    )
    assert accepts(grammar, b"1 22\n\t333")
    assert not accepts(grammar, b"1  x")


@pytest.mark.parametrize(
    "name, good, bad",
    [
        ("ESCAPED_STRING", ['""', '"a\\"b"', '"\\\\"', '"é\\n"'], ['"', '"a"b"', '"\\"', '"a\nb"']),
        ("SIGNED_NUMBER", ["1", "-1.5", "+.5e-3", "2.", "1E9"], ["", "e3", "1.2.3", "--1"]),
        ("CNAME", ["_a1", "Abc"], ["1a", "a-b"]),
        ("C_COMMENT", ["/**/", "/* a * b **/", "/*\n*/"], ["/*/", "/* */ */", "/* a"]),
        ("NEWLINE", ["\n", "\r\n\n"], ["\r", ""]),
        ("HEXDIGIT", ["a", "F", "9"], ["g", "ab"]),
    ],
)
def test_common_terminals(name, good, bad):
    grammar = grammar_from_lark(f"start: {name}\n%import common.{name}")
    for text in good:
        assert accepts(grammar, text.encode()), f"{name} should accept {text!r}"
    for text in bad:
        assert not accepts(grammar, text.encode()), f"{name} should reject {text!r}"


def test_common_terminals_are_all_importable():
    for name in COMMON_TERMINALS:
        grammar = grammar_from_lark(f"start: {name}\n%import common.{name}")
        assert grammar.rules["start"] == g.lex(COMMON_TERMINALS[name])


def test_200_deep_nesting():
    grammar = grammar_from_lark('start: list\nlist: "[" [list ("," list)*] "]"\n%ignore " "')
    assert accepts(grammar, ("[" * 200 + "]" * 200).encode())
    assert accepts(grammar, ("[ " * 200 + "[], []" + " ]" * 200).encode())
    assert not accepts(grammar, ("[" * 200 + "]" * 199).encode())
    assert accepts_prefix(grammar, ("[" * 200 + "]" * 199).encode())


def test_custom_start_rule():
    grammar = grammar_from_lark('value: "v"\nother: "o"', start="value")
    assert grammar == Grammar.from_lark('value: "v"\nother: "o"', start="value")
    assert accepts(grammar, b"v")
    assert not accepts(grammar, b"o")


# (grammar, words the message must contain, the text the error points at)
ERROR_CASES = [
    ("start: item", "undefined rule 'item'", "item"),
    ("start: ITEM", "undefined terminal 'ITEM'", "ITEM"),
    ('start: "a"\nstart: "b"', "defined twice", 'start: "b"'),
    ('start: A\nA: "a"\nA: "b"', "defined twice", 'A: "b"'),
    ('start: A\nA: "a" rule\nrule: "r"', "terminals may use only terminals", "rule"),
    ('start: A\nA: "a" B\nB: "b" A?', "defined in terms of itself", "A?"),
    ("start: A\nA: <|eot|>", "special tokens may appear only in rules", "<|eot|>"),
    ('start: pair{"a"}', "templates", "{"),
    ('_sep{x}: x ","\nstart: "a"', "templates", "{"),
    ("%declare NAME\nstart: NAME", "%declare is not supported", "%declare"),
    ('%override start: "b"\nstart: "a"', "%override is not supported", "%override"),
    ('%extend start: "b"\nstart: "a"', "%extend is not supported", "%extend"),
    ('%include x\nstart: "a"', "unknown directive %include", "%include"),
    ('%import python.NAME\nstart: "a"', "only the 'common' library", "%import"),
    ('%import .local.NAME\nstart: "a"', "module path", "."),
    ('%import common.FOO\nstart: "a"', "common has no terminal 'FOO'", "%import"),
    ('%import common.INT -> num\nstart: "a"', "uppercase", "%import"),
    ("start: /a/l", "unsupported regexp flag(s) 'l'", "/a/l"),
    ("start: /a/i", "case", "/a/i"),
    ("start: /a(/", "in regexp /a(/", ""),
    ('start: ("a" "b"', "')' to close the bracket", ""),
    ('start: ["a"', "']' to close the bracket", ""),
    ('start: "ab".."z"', "single characters", '"ab"'),
    ('start: "a"~x', "count after '~'", "x"),
    ('start: "a"~3..1', "maximum is below the minimum", "~3"),
    ('Mixed: "a"\nstart: "a"', "mixes cases", "Mixed"),
    ('start "a"', "expected ':'", '"a"'),
    ('start: "a" )', "unexpected ')'", ")"),
    ('start: "a" @', "unexpected character '@'", "@"),
    (r'start: "\x4"', "exactly 2 hex digits", r'"\x4"'),
    ("start: /a\nb/", "only with the x (verbose) flag", "/a"),
]


@pytest.mark.parametrize("source, words, at", ERROR_CASES)
def test_errors_name_the_problem_and_place(source, words, at):
    with pytest.raises(GrammarError) as info:
        grammar_from_lark(source)
    assert words in str(info.value)
    assert info.value.position is not None
    assert source[info.value.position :].startswith(at)


def test_missing_start_rule():
    with pytest.raises(GrammarError, match="no start rule 'start'"):
        grammar_from_lark('value: "v"')
