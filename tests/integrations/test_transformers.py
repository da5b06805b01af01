"""The transformers adapter constrains `model.generate` exactly as `grammask.generate` does."""

import json
import subprocess
import sys

import pytest

from grammask.compiler import compile
from grammask.generation import chat_prompt, generate
from grammask.generation.formats import logits_width, tokenizer_vocabulary
from grammask.grammar import Grammar

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.mark.model
@pytest.mark.parametrize(
    "grammar", [Grammar.from_json_schema(SCHEMA), Grammar.from_regex(r"[A-Z][a-z]+ is \d+")], ids=["json", "regex"]
)
def test_same_greedy_output_as_grammask_generate(smollm2, grammar):
    import torch

    from grammask.integrations.transformers import GrammaskLogitsProcessor

    model, tok = smollm2
    prompt = chat_prompt(tok, "Extract as JSON: My name is Dana and I am 27 years old.")
    compiled = compile(grammar, tokenizer_vocabulary(tok, logits_width(model)))
    ours = generate(model, tok, prompt, compiled, max_tokens=30, jump_forward=False)
    ids = torch.tensor([tok.encode(prompt, add_special_tokens=False)])
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=30,
        do_sample=False,
        logits_processor=[GrammaskLogitsProcessor(compiled)],
        pad_token_id=tok.eos_token_id,
    )
    theirs = out[0, ids.shape[1] :].tolist()
    if theirs and theirs[-1] == tok.eos_token_id:
        theirs = theirs[:-1]
    assert theirs == ours.token_ids


@pytest.mark.model
def test_adapter_compiles_grammars_and_handles_a_batch(smollm2):

    from grammask.integrations.transformers import GrammaskLogitsProcessor

    model, tok = smollm2
    prompts = [chat_prompt(tok, "Extract as JSON: Eve is 33."), chat_prompt(tok, "Extract as JSON: Tom is 8.")]
    tok.padding_side = "left"
    batch = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    processor = GrammaskLogitsProcessor(Grammar.from_json_schema(SCHEMA), tokenizer=tok, model=model)
    out = model.generate(
        **batch, max_new_tokens=30, do_sample=False, logits_processor=[processor], pad_token_id=tok.eos_token_id
    )
    for row in out[:, batch["input_ids"].shape[1] :]:
        text = tok.decode(row, skip_special_tokens=True)
        assert set(json.loads(text)) == {"name", "age"}
    with pytest.raises(ValueError, match="tokenizer"):
        GrammaskLogitsProcessor(Grammar.from_regex("a"))


def test_the_adapter_is_reachable_as_an_attribute():
    code = "import grammask.integrations as i; print(i.transformers.GrammaskLogitsProcessor.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "GrammaskLogitsProcessor"
