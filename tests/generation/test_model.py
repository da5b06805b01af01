"""Loading the embedded model: the GGUF is converted once and cached; chat prompts."""

import pytest

from grammask import assets
from grammask.generation.model import DEFAULT_SYSTEM_PROMPT, chat_prompt, load_model

pytestmark = pytest.mark.model


def test_converted_model_is_cached_and_loads_from_its_folder(smollm2):
    model, tok = smollm2
    folders = list((assets.cache_dir() / "models").glob("SmolLM2-135M-Instruct.Q4_1-bfloat16-*"))
    assert len(folders) == 1 and (folders[0] / "config.json").exists()
    again, _ = load_model(folders[0])
    assert again.config.vocab_size == model.config.vocab_size == len(tok)


def test_chat_prompt_has_the_system_prompt_and_assistant_header(smollm2):
    _, tok = smollm2
    text = chat_prompt(tok, "Hello")
    assert DEFAULT_SYSTEM_PROMPT in text and text.endswith("<|im_start|>assistant\n")
    assert "Be brief." in chat_prompt(tok, "Hello", system="Be brief.")


def test_missing_or_wrong_paths_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model at"):
        load_model(tmp_path / "missing.gguf")
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ValueError, match="not a .gguf"):
        load_model(tmp_path / "weights.bin")
