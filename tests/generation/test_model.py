"""Loading a model: the embedded GGUF is converted once (announced) and cached; bad paths fail at
once with the reason; nothing changes the caller's environment; chat prompts."""

import os
import subprocess
import sys

import pytest

from grammask import assets
from grammask.generation.model import (
    DEFAULT_SYSTEM_PROMPT,
    _set_gguf_special_tokens,
    chat_prompt,
    check_model_path,
    forward_keywords,
    load_model,
)


@pytest.mark.model
def test_converted_model_is_cached_and_loads_from_its_folder(smollm2):
    model, tok = smollm2
    folders = list((assets.cache_dir() / "models").glob("SmolLM2-135M-Instruct.Q4_1-bfloat16-*"))
    assert len(folders) == 1 and (folders[0] / "config.json").exists()
    again, _ = load_model(folders[0])
    assert again.config.vocab_size == model.config.vocab_size == len(tok)


@pytest.mark.model
def test_the_converted_tokenizer_has_the_special_tokens_the_gguf_names(smollm2):
    _, tok = smollm2
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id) == (1, 2, 2, 0)
    # transformers 5.17 reads them as `<|im_start|>` for end of sequence and no padding token.
    tok = tok.__class__.from_pretrained(tok.name_or_path, local_files_only=True)
    tok.eos_token, tok.pad_token = "<|im_start|>", None
    _set_gguf_special_tokens(tok, assets.smollm2_gguf_path())
    assert (tok.eos_token, tok.pad_token) == ("<|im_end|>", "<|im_end|>")


@pytest.mark.model
def test_forward_keywords_name_the_cache_as_the_model_takes_and_returns_it(smollm2):
    import torch

    model, tok = smollm2
    keywords = forward_keywords(model)
    assert keywords.logits_to_keep
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([tok.encode("Hello")]), use_cache=True)
    assert keywords.cache in type(out).__dataclass_fields__ and getattr(out, keywords.cache) is not None


@pytest.mark.model
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
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(ValueError, match="is empty: a transformers model folder holds config.json"):
        load_model(tmp_path)


def test_vocabulary_only_gguf_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    vocab_only = assets.vocab_gguf_path("phi-3")
    monkeypatch.setenv("GRAMMASK_CACHE", str(tmp_path))
    announced = []
    with pytest.raises(ValueError, match="no model weights"):
        load_model(vocab_only, announce=announced.append)
    with pytest.raises(ValueError, match="vocabulary-only GGUF"):
        check_model_path(vocab_only)
    assert not announced and not any(tmp_path.iterdir())


@pytest.mark.model
def test_a_conversion_is_announced_with_its_size_and_folder(tmp_path, monkeypatch):
    gguf = assets.smollm2_gguf_path()
    monkeypatch.setenv("GRAMMASK_CACHE", str(tmp_path))
    announced = []
    from grammask.generation.model import prepare_model

    folder = prepare_model(gguf, announce=announced.append)
    (line,) = announced
    assert "269.0 MB" in line and str(folder) in line and folder.parent == tmp_path / "models"
    assert prepare_model(gguf, announce=announced.append) == folder and len(announced) == 1


@pytest.mark.model
def test_importing_and_loading_leave_the_environment_alone():
    code = (
        "import os, transformers\n"
        "before = transformers.logging.get_verbosity()\n"
        "import grammask.integrations.transformers\n"
        "from grammask.generation.model import load_tokenizer, prepare_model\n"
        "load_tokenizer(prepare_model())\n"
        "print(os.environ.get('HF_HUB_OFFLINE'), os.environ.get('TRANSFORMERS_NO_ADVISORY_WARNINGS'),"
        " transformers.logging.get_verbosity() == before)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_NO_ADVISORY_WARNINGS")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "None", "True"]
