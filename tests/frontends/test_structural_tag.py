"""Structural tags (XGrammar's JSON format) → grammar IR, checked string by string against XGrammar."""

import json

import pytest

import grammask
from grammask import Grammar, GrammarError

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402


def tag(begin, content, end):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


CONST = {"type": "const_string", "value": "X"}
ANY = {"type": "any_text"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ARGS = {"type": "json_schema", "json_schema": SCHEMA}
TOOL = tag('<tool_call>\n{"name": "w", "arguments": ', ARGS, "}\n</tool_call>")
TOOL2 = tag('<tool_call>{"name": "w", "arguments": ', ARGS, "}</tool_call>")
CALL = '<tool_call>\n{"name": "w", "arguments": {"city": "Paris"}}\n</tool_call>'
CALL2 = '<tool_call>{"name": "w", "arguments": {"city": "Oslo"}}</tool_call>'

CASES = [
    (CONST, ["X", "", "XX", "Y"]),
    ({"type": "regex", "pattern": r"[a-c]+\d?"}, ["abc1", "a", "", "d", "ab12"]),
    ({"type": "grammar", "grammar": 'root ::= "a" root | "b"'}, ["aab", "b", "a", "ba"]),
    ({"type": "json_schema", "json_schema": SCHEMA}, ['{"city": "x"}', '{"city": 1}', '{"city": "x", "z": 1}', "{}"]),
    ({"type": "sequence", "elements": [CONST, {"type": "const_string", "value": "Y"}]}, ["XY", "X", "YX"]),
    ({"type": "or", "elements": [CONST, {"type": "const_string", "value": "Y"}]}, ["X", "Y", "XY", ""]),
    (ANY, ["", "anything at all", "</a>"]),
    ({"type": "any_text", "excludes": ["ab", "cd"]}, ["", "a b", "xab", "acd", "aabb", "ca"]),
    (tag("<a>", ANY, "</a>"), ["<a></a>", "<a>x<y</a>", "<a>x</a>y</a>", "<a>x</a", "<a></a></a>"]),
    (tag("<a>", ANY, ["</a>", "</b>"]), ["<a>1</b>", "<a>1</a>", "<a>1</b>2</a>", "<a>1"]),
    (tag("<a>", {"type": "sequence", "elements": [CONST, ANY]}, "</a>"), ["<a>X</a>", "<a>Xz</a>", "<a>z</a>"]),
    (tag("<<", ANY, "<<>"), ["<<<<>", "<<a<<<>", "<<a<<><<>", "<<<><<>"]),
    ({"type": "sequence", "elements": [ANY, {"type": "const_string", "value": "END"}]}, ["END", "xEND", "ENDEND", "x"]),
    ({"type": "optional", "content": CONST}, ["", "X", "XX"]),
    ({"type": "plus", "content": CONST}, ["", "X", "XXX"]),
    ({"type": "star", "content": CONST}, ["", "XXX", "Y"]),
    ({"type": "repeat", "min": 2, "max": 3, "content": CONST}, ["X", "XX", "XXX", "XXXX"]),
    ({"type": "repeat", "min": 1, "max": -1, "content": CONST}, ["", "X", "XXXXX"]),
    (
        {"type": "tags_with_separator", "tags": [tag("<a>", CONST, "</a>")], "separator": ","},
        ["", "<a>X</a>", "<a>X</a>,<a>X</a>", "<a>X</a><a>X</a>", ",<a>X</a>"],
    ),
    (
        {"type": "tags_with_separator", "tags": [TOOL, TOOL2], "separator": "", "at_least_one": True},
        [CALL, CALL + CALL2, "", "hi" + CALL],
    ),
    (
        {
            "type": "tags_with_separator",
            "tags": [TOOL, TOOL2],
            "separator": "",
            "at_least_one": True,
            "stop_after_first": True,
        },
        [CALL, CALL2, CALL + CALL2, ""],
    ),
    (
        {
            "type": "tags_with_separator",
            "tags": [tag("<a>", CONST, "</a>")],
            "separator": ";",
            "stop_after_first": True,
        },
        ["", "<a>X</a>", "<a>X</a>;<a>X</a>"],
    ),
    (
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [TOOL, TOOL2]},
        ["", "hello", "hi " + CALL + " bye", CALL + CALL2, "<tool_call>oops", "a <tool_call", CALL + "<tool_call>"],
    ),
    (
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [TOOL], "at_least_one": True},
        [CALL, CALL + " then text", "text " + CALL, ""],
    ),
    (
        {"type": "triggered_tags", "triggers": ["<t"], "tags": [tag("<t1>", CONST, "</t>")], "stop_after_first": True},
        ["", "ab", "ab<t1>X</t>", "ab<t1>X</t>cd", "<t1>X</t><t1>X</t>", "<t2>"],
    ),
    (
        {
            "type": "triggered_tags",
            "triggers": ["<t"],
            "tags": [tag("<t1>", CONST, "</t>")],
            "at_least_one": True,
            "stop_after_first": True,
        },
        ["<t1>X</t>", "a<t1>X</t>", "<t1>X</t>a"],
    ),
    (
        {
            "type": "triggered_tags",
            "triggers": ["<t"],
            "tags": [tag("<t1>", CONST, "</t>"), tag("<t2>", ANY, "</t>")],
            "excludes": ["zz"],
        },
        ["a<t2>b</t>c", "zz", "a<t1>X</t>z", "<t2>zz</t>", "<t2>a</t>b</t>"],
    ),
    (
        {"type": "triggered_tags", "triggers": ["abab"], "tags": [tag("ababX", CONST, ".")]},
        ["ababXX.", "abababXX.", "abaababXX.", "ab"],
    ),
    (
        tag("<r>", {"type": "triggered_tags", "triggers": ["<f"], "tags": [tag("<f>", CONST, "</f>")]}, "</r>"),
        ["<r></r>", "<r>a<f>X</f>b</r>", "<r>a</r>b</r>"],
    ),
]


@pytest.mark.parametrize("fmt, strings", CASES, ids=[c[0]["type"] + str(i) for i, c in enumerate(CASES)])
def test_same_language_as_xgrammar(fmt, strings, vocab_llama3):
    spec = {"type": "structural_tag", "format": fmt}
    compiled = grammask.compile(Grammar.from_structural_tag(spec), vocab_llama3)
    reference = xgr.Grammar.from_structural_tag(json.dumps(spec))
    for text in strings:
        matcher = compiled.matcher()
        ours = matcher.accept_string(text) and matcher.can_finish()
        assert ours == _is_grammar_accept_string(reference, text), text


def test_vllm_hermes_tool_calls(vocab_llama3):
    """The tag vLLM sends for `tool_choice="required"` with the hermes parser, as JSON text."""
    spec = json.dumps(
        {
            "type": "structural_tag",
            "format": {
                "type": "tags_with_separator",
                "separator": "",
                "at_least_one": True,
                "stop_after_first": False,
                "tags": [
                    {
                        **TOOL,
                        "content": {
                            **TOOL["content"],
                            "style": "json",
                            "any_order": False,
                            "max_whitespace_cnt": None,
                            "excludes": [],
                        },
                    },
                    TOOL2,
                ],
            },
        }
    )
    m = grammask.compile(Grammar.from_structural_tag(spec), vocab_llama3).matcher()
    assert m.accept_string(CALL) and m.can_finish()
    assert not m.accept_string('<tool_call>{"name": "w", "arguments": {"city": "x", "extra": 1}}</tool_call>')


def test_legacy_form(vocab_llama3):
    spec = {"structures": [{"begin": "<f=w>", "schema": SCHEMA, "end": "</f>"}], "triggers": ["<f="]}
    m = grammask.compile(Grammar.from_structural_tag(spec), vocab_llama3).matcher()
    assert m.accept_string('say <f=w>{"city": "a"}</f> done') and m.can_finish()
    assert not m.accept_string("<f=v>")


def test_json_schema_options(vocab_llama3):
    spec = {"type": "json_schema", "json_schema": {"type": "object"}}
    lax = grammask.compile(Grammar.from_structural_tag(spec, strict=False), vocab_llama3).matcher()
    assert lax.accept_string('{"a": 1}')
    compact = grammask.compile(
        Grammar.from_structural_tag({**spec, "json_schema": SCHEMA}, whitespace="compact"), vocab_llama3
    ).matcher()
    assert not compact.accept_string('{"city": "a"}') and compact.accept_string('{"city":"a"}')
    bounded = {**spec, "json_schema": SCHEMA, "max_whitespace_cnt": 1}
    m = grammask.compile(Grammar.from_structural_tag(bounded), vocab_llama3).matcher()
    assert not m.accept_string('{  "city"') and m.accept_string('{ "city"')


@pytest.mark.parametrize(
    "spec, message",
    [
        ("{", "not valid JSON"),
        ([], "JSON object"),
        ({"type": "structural_tag", "format": {"type": "nope"}}, "unsupported structural tag format 'nope'"),
        ({"type": "any_tokens", "exclude_tokens": []}, "unsupported"),
        ({"type": "json_schema", "json_schema": {}, "style": "qwen_xml"}, "style 'qwen_xml'"),
        ({"type": "any_text", "max_tokens": 5}, "max_tokens"),
        ({"type": "triggered_tags", "triggers": ["<a"], "tags": [tag("<b>", CONST, "</b>")]}, "exactly one trigger"),
        ({"type": "tag", "begin": "<a>", "content": CONST, "end": 3}, "'end'"),
        ({"type": "repeat", "min": 3, "max": 1, "content": CONST}, "below min"),
        ({"type": "sequence", "elements": []}, "non-empty list 'elements'"),
        ({"type": "regex", "pattern": "("}, ""),
    ],
)
def test_errors(spec, message):
    with pytest.raises(GrammarError, match=message):
        Grammar.from_structural_tag(spec)


def test_special_token_tags(vocab_llama3):
    eot = vocab_llama3.token_bytes[vocab_llama3.eos_ids[0]].decode()
    spec = tag({"type": "token", "token": eot}, CONST, {"type": "token", "token": eot})
    compiled = grammask.compile(Grammar.from_structural_tag(spec), vocab_llama3)
    m = compiled.matcher(stop_token_ids=[vocab_llama3.token_id("!")])
    assert m.advance(vocab_llama3.eos_ids[0]) and m.accept_string("X") and m.advance(vocab_llama3.eos_ids[0])
    assert m.can_finish()


@pytest.mark.model
def test_generate_a_tool_call(smollm2):
    """The hermes tool-call tag in grammask's own generation loop: free text, then a valid call."""
    model, tokenizer = smollm2
    spec = {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [TOOL], "at_least_one": True}
    result = grammask.generate(
        model,
        tokenizer,
        "What is the weather in Paris? Call the tool.",
        Grammar.from_structural_tag(spec),
        max_tokens=40,
    )
    begin = '<tool_call>\n{"name": "w", "arguments": '
    assert result.text.startswith(begin) and "}\n</tool_call>" in result.text
    arguments = json.loads(result.text[len(begin) : result.text.index("}\n</tool_call>")])
    assert set(arguments) == {"city"} and arguments["city"]
