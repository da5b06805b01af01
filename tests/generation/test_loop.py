"""`grammask.generate` with the real SmolLM2 model: the seed examples, many formats, jump-forward,
safe end, stop strings, streaming and batches. Greedy and short, to stay fast on two cores."""

import copy
import json
import re
import warnings
from pathlib import Path

import jsonschema
import pytest

from grammask.compiler import compile
from grammask.engine.recognize import accepts
from grammask.generation import chat_prompt, generate
from grammask.generation.formats import logits_width, tokenizer_vocabulary
from grammask.generation.loop import check_budget
from grammask.grammar import Grammar
from grammask.processors import ForbidCharacters

pytestmark = pytest.mark.model

EXAMPLES = Path(__file__).parents[2] / "examples"
PERSON = json.loads((EXAMPLES / "person.json").read_text())
TOOLS_SYSTEM = (
    "You are a helpful assistant with tool calling. Functions: get_user_info(user_id: int, "
    "special: str). Reply only with a call: [func_name(param=value, ...)]."
)


def test_seed_poem_without_the_letter_e(smollm2):
    model, tok = smollm2
    vocab = tokenizer_vocabulary(tok, logits_width(model))
    result = generate(
        model,
        tok,
        chat_prompt(tok, "Write a short poem about the sea."),
        max_tokens=30,
        processors=[ForbidCharacters("eE", vocab)],
    )
    assert len(result.text) > 40
    assert "e" not in result.text.lower()


def test_seed_token_automaton_repeats_1_2_3(smollm2):
    model, tok = smollm2
    cycle = Grammar.from_transitions(0, [(0, 1, 1), (1, 2, 2), (2, 3, 3), (3, 1, 1)], [3])
    result = generate(model, tok, chat_prompt(tok, "Count."), cycle, max_tokens=12)
    ids = result.token_ids
    assert ids and len(ids) % 3 == 0 and ids == [1, 2, 3] * (len(ids) // 3)


def test_seed_name_and_age_extraction(smollm2):
    model, tok = smollm2
    prompt = chat_prompt(tok, "Extract the person as JSON. My name is Alice and I am 30 years old.")
    result = generate(model, tok, prompt, Grammar.from_json_schema(PERSON), max_tokens=40)
    assert json.loads(result.text) == {"name": "Alice", "age": 30}
    assert result.finish_reason == "eos"


def test_seed_pythonic_tool_call(smollm2):
    model, tok = smollm2
    grammar = Grammar.from_ebnf((EXAMPLES / "tool_call.gbnf").read_text())
    prompt = chat_prompt(tok, "Get the info of user 7890, with special value 'black'.", system=TOOLS_SYSTEM)
    result = generate(model, tok, prompt, grammar, max_tokens=40)
    assert result.text == "[get_user_info(user_id=7890, special='black')]"
    assert result.passes_saved > 0


SCHEMAS = [
    PERSON,
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    },
    {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 4},
    {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False},
    {"enum": ["red", "green", "blue"]},
    {"type": "number", "minimum": 0, "maximum": 100},
    {"type": "string", "pattern": "^[A-Z][a-z]+$"},
    {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
        "required": ["tags"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            }
        },
        "required": ["point"],
        "additionalProperties": False,
    },
    {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    {
        "type": "object",
        "properties": {"status": {"const": "done"}, "count": {"type": "integer"}},
        "required": ["status", "count"],
        "additionalProperties": False,
    },
    {"type": "string", "format": "date"},
    {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
]

OTHER_FORMATS = [
    (r"(yes|no)", "Is the sky blue? Answer yes or no."),
    (r"[0-9]{3}-[0-9]{4}", "Invent a phone number like 555-1234."),
    (r"[A-Z][a-z]+ [A-Z][a-z]+", "Name a famous scientist."),
    (r"\d{4}-\d{2}-\d{2}", "When did World War II end? Give the date."),
    (r"#[0-9a-f]{6}", "Give a hex color code for red."),
]

GBNF = ["arithmetic.gbnf", "list.gbnf", "chess.gbnf"]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_json_schema_outputs_are_valid(smollm2, schema):
    model, tok = smollm2
    prompt = chat_prompt(tok, f"Give an example of JSON for this schema: {json.dumps(schema)}")
    result = generate(model, tok, prompt, Grammar.from_json_schema(schema, whitespace="compact"), max_tokens=24)
    jsonschema.validate(json.loads(result.text), schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("pattern,request_", OTHER_FORMATS)
def test_regex_outputs_match(smollm2, pattern, request_):
    import re

    model, tok = smollm2
    result = generate(model, tok, chat_prompt(tok, request_), Grammar.from_regex(pattern), max_tokens=16)
    assert re.fullmatch(pattern, result.text), result.text


@pytest.mark.parametrize("name", GBNF)
def test_gbnf_outputs_parse(smollm2, name):
    from grammask import assets

    model, tok = smollm2
    grammar = Grammar.from_ebnf((assets.llama_cpp_vendor_dir() / "grammars" / name).read_text())
    result = generate(model, tok, chat_prompt(tok, f"Write an example for the grammar {name}."), grammar, max_tokens=24)
    assert accepts(grammar, result.text.encode()), result.text


def test_jump_forward_keeps_the_text_and_saves_passes(smollm2):
    model, tok = smollm2
    prompt = chat_prompt(tok, "Extract the person as JSON. My name is Bob and I am 41 years old.")
    grammar = Grammar.from_json_schema(PERSON, whitespace=2)
    slow = generate(model, tok, prompt, grammar, max_tokens=40, jump_forward=False)
    fast = generate(model, tok, prompt, grammar, max_tokens=40)
    assert fast.text == slow.text and fast.token_ids == slow.token_ids
    # Without jump-forward only the final end-of-sequence pass is saved (the grammar allows nothing else).
    assert slow.passes_saved == 1 and fast.passes_saved >= 6
    assert fast.forward_passes + fast.passes_saved == slow.forward_passes + slow.passes_saved


def test_safe_end_closes_the_format_within_the_budget(smollm2):
    model, tok = smollm2
    prompt = chat_prompt(tok, "Write a long story about a person as JSON.")
    grammar = Grammar.from_json_schema(PERSON, whitespace=2)
    for budget in (15, 19):
        result = generate(model, tok, prompt, grammar, max_tokens=budget)
        assert len(result.token_ids) <= budget
        jsonschema.validate(json.loads(result.text), PERSON)
        # The truncation is not silent: the result says the model's own text needed more tokens.
        assert (result.finish_reason == "length") == (result.tokens_short > 0) == (budget == 15)
    roomy = generate(model, tok, chat_prompt(tok, "Alice is 30. As JSON."), grammar, max_tokens=60)
    assert roomy.finish_reason == "eos" and roomy.tokens_short == 0
    cut = generate(model, tok, prompt, grammar, max_tokens=16, safe_end=False)
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.text)
    assert cut.finish_reason == "length" and cut.tokens_short == 0


def test_a_budget_too_small_for_the_format_is_a_value_error_before_decoding(smollm2):
    model, tok = smollm2
    compiled = compile(Grammar.from_json_schema(PERSON, whitespace=2), tokenizer_vocabulary(tok, logits_width(model)))
    with pytest.raises(ValueError, match="needs at least 15 tokens but max_tokens is 13"):
        check_budget(compiled, tok, 13)
    check_budget(compiled, tok, 15)
    with pytest.raises(ValueError, match="needs at least 15 tokens"):
        generate(model, tok, "Hi", compiled, max_tokens=13, stream=True)


def test_stop_string_and_streaming(smollm2):
    model, tok = smollm2
    prompt = chat_prompt(tok, "Count from 1 to 20, separated by commas.")
    stream = generate(model, tok, prompt, max_tokens=40, stop=["5"], stream=True)
    pieces = list(stream)
    assert stream.result is not None and stream.result.finish_reason == "stop"
    assert "".join(pieces) == stream.result.text and stream.result.text.startswith("1, 2, 3, 4")
    assert "5" not in stream.result.text


def test_batch_rows_with_different_formats_match_single_runs(smollm2):
    # In float64: a batched forward pass rounds differently from a single one on some CPUs (an
    # Intel Xeon flipped a near tie of the free row in float32), and the test is about the rows.
    model, tok = smollm2
    model = copy.deepcopy(model).double()
    prompts = [
        chat_prompt(tok, "Extract the person as JSON: Carol is 52."),
        chat_prompt(tok, "Say hi."),
        chat_prompt(tok, "Pick a number between 1 and 100."),
    ]
    formats = [Grammar.from_json_schema(PERSON, whitespace=2), None, Grammar.from_regex("[0-9]+")]
    batch = generate(model, tok, prompts, formats, max_tokens=20)
    single = [generate(model, tok, p, f, max_tokens=20) for p, f in zip(prompts, formats, strict=True)]
    assert [r.token_ids for r in batch] == [r.token_ids for r in single]


def test_decoding_passes_the_cache_under_the_keyword_the_model_takes(smollm2):
    """transformers 5.24 takes the key/value cache as `cache` and warns (FutureWarning) where it is
    passed as `past_key_values`, which goes in 5.40; transformers 4 takes only the latter."""
    model, tok = smollm2
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        result = generate(model, tok, chat_prompt(tok, "Count to three."), Grammar.from_regex("[0-9]{3}"), max_tokens=6)
    assert re.fullmatch("[0-9]{3}", result.text)
