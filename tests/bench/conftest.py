"""Fixtures shared by the benchmark tests: the real Llama 3 vocabulary and tokenizer, and one loaded
adapter per engine (built once per session: loading a peer's tokenizer takes about a second)."""

from __future__ import annotations

import pytest

from grammask import assets
from grammask.bench.engines import ENGINES, Engine, engine_available, load_engine
from grammask.bench.tokenize import Llama3Tokenizer
from grammask.vocab.vocabulary import Vocabulary


@pytest.fixture(scope="session")
def llama3() -> Vocabulary:
    return Vocabulary.from_gguf(assets.vocab_gguf_path("llama-bpe"))


@pytest.fixture(scope="session")
def tokenizer() -> Llama3Tokenizer:
    pytest.importorskip("tokenizers")
    return Llama3Tokenizer(assets.vocab_gguf_path("llama-bpe"))


@pytest.fixture(scope="session")
def loaded_engines() -> dict[str, Engine]:
    return {}


@pytest.fixture(params=ENGINES)
def engine(
    request: pytest.FixtureRequest,
    llama3: Vocabulary,
    tokenizer: Llama3Tokenizer,
    loaded_engines: dict[str, Engine],
) -> Engine:
    """Each engine in turn (skipped when not installed), loaded once per session."""
    name = request.param
    if not engine_available(name):
        pytest.skip(f"{name} is not installed")
    if name not in loaded_engines:
        loaded_engines[name] = load_engine(name, llama3, tokenizer.encode_bytes)
    return loaded_engines[name]
