"""Session-wide fixtures: real vocabularies from the cached llama.cpp GGUF vocabulary files.

Each loads once per test session. `vocab_llama3` is Llama 3.0's byte-level BPE vocabulary
(`ggml-vocab-llama-bpe.gguf`: no `<|python_tag|>` or `<|eom_id|>`, which came with 3.1).
"""

import os
from pathlib import Path

import pytest

from grammask import assets
from grammask.vocab import Vocabulary

#: The torch device of the model tests: `GRAMMASK_TEST_DEVICE=cuda` runs them on a GPU.
TEST_DEVICE = os.environ.get("GRAMMASK_TEST_DEVICE", "cpu")

#: JSONSchemaBench's MaskBench files, next to the clone; the MaskBench tests skip without them.
MASKBENCH = Path(__file__).resolve().parents[2] / "shared" / "maskbench-dev"


def pytest_report_header() -> list[str]:
    found = "found" if MASKBENCH.is_dir() else "not found: the MaskBench tests will skip"
    return [f"maskbench-dev ({MASKBENCH}): {found}", f"model tests on device: {TEST_DEVICE}"]


def _load(name: str) -> Vocabulary:
    return Vocabulary.from_gguf(assets.vocab_gguf_path(name))


@pytest.fixture(scope="session")
def vocab_llama3() -> Vocabulary:
    return _load("llama-bpe")


@pytest.fixture(scope="session")
def vocab_qwen2() -> Vocabulary:
    return _load("qwen2")


@pytest.fixture(scope="session")
def vocab_llama_spm() -> Vocabulary:
    return _load("llama-spm")


@pytest.fixture(scope="session")
def vocab_phi3() -> Vocabulary:
    return _load("phi-3")


@pytest.fixture(scope="session")
def vocab_gemma4() -> Vocabulary:
    return _load("gemma-4")


@pytest.fixture(scope="session")
def vocab_gpt2() -> Vocabulary:
    return _load("gpt-2")


@pytest.fixture(scope="session")
def smollm2():
    """`(model, tokenizer)` of the embedded SmolLM2-135M-Instruct (converted once, then cached),
    on `TEST_DEVICE`."""
    from grammask.generation import load_model

    return load_model(device=TEST_DEVICE)
