"""GBNF front-end: llama.cpp's own grammars, every syntax feature, and its error messages."""

from __future__ import annotations

import pytest

from grammask import Grammar, assets
from grammask.engine.recognize import accepts, accepts_prefix
from grammask.errors import GrammarError
from grammask.frontends.ebnf import grammar_from_ebnf
from grammask.ir import grammar as g
from grammask.ir import regex as rx


def gbnf_file(name: str) -> str:
    return (assets.llama_cpp_vendor_dir() / "grammars" / f"{name}.gbnf").read_text()


# name of the vendor grammar → (texts it accepts, texts it rejects)
VENDOR_SAMPLES = {
    "arithmetic": (
        ["1+2=3\n", "(a+b)*c= x\n", "x=1\ny_2=2\n", "( a ) = b\n"],
        ["1+2=3", "=3\n", "A=1\n", "1++2=3\n", ""],
    ),
    "c": (
        [
            "",
            "int main(){return 0;}",
            "int f(int x){x = x+1;return x;}float g(){}",
            "char c(){while(a<b){a = a+1;}}",
            "int h(){// note\n/* block */}",
        ],
        ["int main() {return 0;}", "int main(){return 0}", "void f(){}", "int 1x(){}"],
    ),
    "chess": (
        ["1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n10. O-O-O Qxd8#\n", "1. e4 e5\n2. e8=Q+ Kxe8\n"],
        ["1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4 e5\n2. Nf3 Nc6", "1. e4  e5\n2. a3 a6\n"],
    ),
    "english": (
        ["Hello, world!", "a\tb\nc", "It's 42 [sic] {ok} ~`^_|\\"],
        ["", "Hello  world", "héllo", "trailing "],
    ),
    "japanese": (
        ["こんにちは 世界", "カタカナ、ひらがな。"],
        ["hello", "", "日本 "],
    ),
    "json": (
        ["{}", '{"a": [1, 2.5, true, null], "b": {"c": "d\\n\\u00e9"}}', '{"k":-0.5e19}', '{\n  "x": []\n}'],
        [
            "[1]",
            '{"a":}',
            '{"a": 01}',
            '{"a": "\x01"}',
            '{"a": 1,}',
            '{"a" 1}',
            '{"a": "\\x"}',
            '{"k": 1e10}',
        ],  # json.gbnf's exponent is [0-9] [1-9]{0,15}: a quirk kept exactly
    ),
    "json_arr": (
        ["[\n]", "[\n1,\n2]", '[\n{"a": [true]},\n"s"]'],
        ["[1]", "[\n1, 2]", "[\n1]\n"],
    ),
    "list": (
        ["- a\n", "- milk\n- eggs and ham\n"],
        ["- a", "- \n", "* a\n", "", "- a\r\n"],
    ),
}


def test_every_vendor_grammar_has_samples():
    names = {p.stem for p in (assets.llama_cpp_vendor_dir() / "grammars").glob("*.gbnf")}
    assert names == set(VENDOR_SAMPLES)


@pytest.mark.parametrize("name", sorted(VENDOR_SAMPLES))
def test_vendor_grammar(name):
    grammar = grammar_from_ebnf(gbnf_file(name))
    good, bad = VENDOR_SAMPLES[name]
    for text in good:
        assert accepts(grammar, text.encode()), f"{name} should accept {text!r}"
    for text in bad:
        assert not accepts(grammar, text.encode()), f"{name} should reject {text!r}"


# (grammar, texts it accepts, texts it rejects), each exercising one piece of syntax
SYNTAX_CASES = [
    # escapes in literals
    (r'root ::= "a\tb\nc\rd\\e\"f\x41\u00e9\U0001F600\[\]"', ['a\tb\nc\rd\\e"fAé😀[]'], ["a\\tb"]),
    # character classes: ranges, escapes, a trailing dash, negation
    (r"root ::= [a-c\x30-\x32_-]+", ["abc012_-", "-"], ["d", "3", ""]),
    (r'root ::= [^\n"]*', ["any thing é", ""], ["a\nb", 'a"']),
    (r"root ::= [\]\[\\]", ["]", "[", "\\"], ["a"]),
    # any character
    (r'root ::= . "!"', ["x!", "é!", "\n!"], ["!", "ab!"]),
    # repetition counts
    (r'root ::= "ab"{2}', ["abab"], ["ab", "ababab", "aab"]),
    (r"root ::= [0-9]{2,}", ["12", "12345"], ["1"]),
    (r'root ::= [0-9]{1,3} "."', ["1.", "123."], [".", "1234."]),
    (r'root ::= "x"{ 0 , 2 }', ["", "x", "xx"], ["xxx"]),
    (r'root ::= ("a" | "b")+ "c"? ("d" "e")*', ["a", "abac", "bdede", "acde"], ["", "c", "ad"]),
    # a repetition applies to the item before it, even a repeated one
    (r'root ::= "a"*?', ["", "aaa"], ["b"]),
    # comments, dashed names, multi-line rules continued after '|' and inside parentheses
    (
        (
            "# leading comment\nroot ::= first-part | # trailing\n  second-2\n"
            'first-part ::= (\n  "x" # in group\n  "y"\n)\nsecond-2 ::= "z"\n'
        ),
        ["xy", "z"],
        ["x", "xyz"],
    ),
    # CRLF line endings and an empty alternative
    ('root ::= "a" opt\r\nopt ::= | "b"\r\n', ["a", "ab"], ["b"]),
    # uppercase and digits in names, rules used before they are defined
    ('root ::= Rule2 Rule2\nRule2 ::= "q"', ["qq"], ["q"]),
    # left recursion (llama.cpp refuses it; the IR is a general context-free grammar)
    ('root ::= root "+" "1" | "1"', ["1", "1+1+1"], ["+1", "1+"]),
]


@pytest.mark.parametrize("source, good, bad", SYNTAX_CASES)
def test_syntax(source, good, bad):
    grammar = grammar_from_ebnf(source)
    for text in good:
        assert accepts(grammar, text.encode()), f"{source!r} should accept {text!r}"
    for text in bad:
        assert not accepts(grammar, text.encode()), f"{source!r} should reject {text!r}"


def test_ir_is_built_from_trees():
    grammar = grammar_from_ebnf('root ::= "ab" [c-d] item\nitem ::= "x"*')
    body = grammar.rules["root"]
    assert body == g.seq(g.lex(rx.concat(rx.literal("ab"), rx.char_class([(0x63, 0x64)]))), g.ref("item"))
    assert grammar.rules["item"] == g.lex(rx.star(rx.literal("x")))
    assert grammar.start == "root"


def test_special_tokens():
    grammar = grammar_from_ebnf('root ::= <[128010]> "x" <|python_tag|> <think>')
    assert grammar.rules["root"] == g.seq(
        g.token(128010), g.literal("x"), g.token("<|python_tag|>"), g.token("<think>")
    )
    # special tokens never match text
    assert not accepts(grammar, b"x<|python_tag|><think>")


def test_custom_start_rule():
    grammar = grammar_from_ebnf('value ::= "v"\nother ::= "o"', start="value")
    assert grammar == Grammar.from_ebnf('value ::= "v"\nother ::= "o"', start="value")
    assert grammar.start == "value"
    assert accepts(grammar, b"v")
    assert not accepts(grammar, b"o")


def test_200_deep_nesting():
    grammar = grammar_from_ebnf('root ::= list\nlist ::= "[" (list ("," list)*)? "]"')
    deep = "[" * 200 + "]" * 200
    assert accepts(grammar, deep.encode())
    assert accepts(grammar, ("[" * 200 + "],[" + "]" * 200).encode())
    assert not accepts(grammar, ("[" * 200 + "]" * 199).encode())
    assert accepts_prefix(grammar, ("[" * 200 + "]" * 199).encode())
    assert not accepts_prefix(grammar, ("[" * 200 + "]" * 201).encode())


# (grammar, words the message must contain, the character the error points at)
ERROR_CASES = [
    ("root ::= item\n", "undefined rule 'item'", "item"),
    ('root ::= "a"\nroot ::= "b"', "defined twice", 'root ::= "b"'),
    ('root = "a"', "expected '::='", '= "a"'),
    ('root ::= ("a" "b"', "expected ')'", '("a"'),
    ('root ::= "a" )', "unexpected ')'", ")"),
    ('root ::= * "a"', "no preceding item", "*"),
    (r'root ::= "\q"', "unknown escape", r"\q"),
    (r'root ::= "\x4"', "exactly 2 hex digits", r"\x4"),
    (r'root ::= "\U00110000"', "beyond U+10FFFF", r"\U"),
    ('root ::= "abc', "unexpected end", ""),
    ("root ::= [abc", "unexpected end", ""),
    ('root ::= "a"{3,1}', "maximum is below the minimum", "{3,1}"),
    ('root ::= "a"{x}', "expected an integer", "x}"),
    ('root ::= "a"{1;2}', "expected ',' or '}'", ";2}"),
    ("root ::= !<[12]>", "negated tokens", "!<"),
    ("root ::= <[12>", "expected ']>'", ">"),
    ("root ::= <oops", "expected '>'", "<oops"),
    ('::= "a"', "expected a rule name", "::="),
    ('root ::= "a"\n"b"', "expected a rule name", '"b"'),
    # a newline ends a rule unless it follows '|' or is inside parentheses
    ('root ::= "a"\n  | "b"', "expected a rule name", '| "b"'),
]


@pytest.mark.parametrize("source, words, at", ERROR_CASES)
def test_errors_name_the_problem_and_place(source, words, at):
    with pytest.raises(GrammarError) as info:
        grammar_from_ebnf(source)
    assert words in str(info.value)
    assert info.value.position is not None
    assert source[info.value.position :].startswith(at)
    assert "line" in str(info.value)


def test_missing_start_rule():
    with pytest.raises(GrammarError, match="no start rule 'root'"):
        grammar_from_ebnf('value ::= "v"')
    with pytest.raises(GrammarError, match="no start rule 'main'"):
        grammar_from_ebnf('root ::= "v"', start="main")
