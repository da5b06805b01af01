"""The vLLM backend without a server: registration, request validation, the per-request grammar.

Runs in the vLLM environment (scripts/test_vllm.sh); skipped where vLLM is not installed.
"""

import json
import os
import subprocess
import sys

import pytest

vllm = pytest.importorskip("vllm")

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from vllm.config import ModelConfig, VllmConfig  # noqa: E402
from vllm.config.structured_outputs import StructuredOutputsConfig  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import SamplingParams, StructuredOutputsParams  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402
from vllm.v1.structured_output.backend_types import StructuredOutputOptions  # noqa: E402

import grammask  # noqa: E402
from grammask.engine import tables  # noqa: E402
from grammask.integrations import vllm as backend  # noqa: E402

backend.register()


@pytest.fixture(scope="module")
def tokenizer():
    folder = os.environ.get("GRAMMASK_VLLM_MODEL")
    if not folder:
        pytest.skip("GRAMMASK_VLLM_MODEL (a transformers model folder) is not set")
    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def vocab(tokenizer):
    return backend._vocabulary(tokenizer, 49152 + 64)  # wider than the tokenizer, as models pad


def test_config_accepts_grammask():
    config = StructuredOutputsConfig(backend="grammask", disable_any_whitespace=True)
    assert config.backend == "grammask"
    with pytest.raises(ValueError, match="disable_any_whitespace"):
        StructuredOutputsConfig(backend="outlines", disable_any_whitespace=True)
    with pytest.raises(ValueError):
        StructuredOutputsConfig(backend="nonsense")
    backend.register()  # idempotent


def _validate(tokenizer, **params):
    sampling = SamplingParams(structured_outputs=StructuredOutputsParams(**params))
    sampling._validate_structured_outputs(None, StructuredOutputsConfig(backend="grammask"), tokenizer)
    return sampling


def test_request_validation(tokenizer):
    assert _validate(tokenizer, json={"type": "object"}).structured_outputs._backend == "grammask"
    _validate(tokenizer, regex=r"\d+")
    _validate(tokenizer, choice=["a", "b"])
    _validate(tokenizer, grammar='root ::= "x"')
    _validate(tokenizer, grammar='start: "x"')
    _validate(tokenizer, structural_tag='{"type": "structural_tag", "format": {"type": "const_string", "value": "x"}}')
    for bad in (
        {"json": {"type": "string", "pattern": "("}},
        {"regex": "(("},
        {"grammar": "root ::= ("},
        {"choice": []},
        {"structural_tag": '{"type": "structural_tag", "format": {"type": "nope"}}'},
        {"json": "{not json"},
        {"regex": "a", "whitespace_pattern": " *"},
    ):
        with pytest.raises(VLLMValidationError):
            _validate(tokenizer, **bad)


def test_grammar_object(tokenizer, vocab):
    gb = backend.GrammaskBackend.__new__(backend.GrammaskBackend)
    gb.vocab, gb.compact, gb.vocab_size, gb.limits = vocab, True, vocab.size, backend._limits()
    eos = tokenizer.eos_token_id
    schema = '{"type": "object", "properties": {"a": {"type": "integer"}}}'
    grammar = gb.compile_grammar(StructuredOutputOptions.JSON, schema, stop_token_ids={eos})
    ids = tokenizer.encode('{"a":12}')
    assert grammar.validate_tokens(ids + [eos, eos]) == ids + [eos]
    spaced = tokenizer.encode('{"a": 1}')
    accepted = grammar.validate_tokens(spaced)
    assert accepted == spaced[: len(accepted)] and tokenizer.decode(accepted) == '{"a":'  # compact: no space
    assert grammar.num_processed_tokens == 0
    bitmask = gb.allocate_token_bitmask(3)
    assert bitmask.shape == (3, (vocab.size + 31) // 32) and bool((bitmask == -1).all())
    grammar.fill_bitmask(bitmask, 2)
    assert int(bitmask[2, -2:].abs().sum()) == 0  # padding words cleared
    assert grammar.accept_tokens("r", ids)
    grammar.rollback(len(ids) - 1)
    assert grammar.accept_tokens("r", ids[1:] + [eos, 7, 8])  # tokens after the end are ignored
    assert grammar.is_terminated() and grammar.num_processed_tokens == len(ids) + 1
    assert grammar.validate_tokens([1, 2]) == []
    grammar.rollback(1)
    assert not grammar.is_terminated()
    assert not grammar.accept_tokens("r", tokenizer.encode("x"))
    grammar.reset()
    assert grammar.num_processed_tokens == 0 and not grammar.is_terminated()
    assert grammar.accept_tokens("r", ids[:1])
    row = torch.zeros((1, bitmask.shape[1]), dtype=torch.int32)
    grammar.fill_bitmask(row, 0)
    assert bool(row.any())


def test_vocabulary_built_once(tokenizer):
    assert backend._vocabulary(tokenizer, 49152) is backend._vocabulary(tokenizer, 49152)


def test_grammask_in_sys_modules_survives_vllm_cpu_kernel_scan():
    """vLLM's CPU worker scans every loaded module's objects at start (`_rebind_kernels`), and the
    plugin loads grammask in every vLLM process: nothing grammask imports may break that scan (an
    eagerly imported numba does: llvmlite's `ffi.lib` answers `__dict__` with a function wrapper)."""
    # A fresh process, as a vLLM worker starts: the plugin has loaded grammask, no mask yet.
    code = (
        "import grammask.integrations.vllm\n"
        "from vllm.triton_utils.dispatcher import _rebind_kernels\n"
        "_rebind_kernels([])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_the_engine_builds_a_grammask_backend_and_its_tables_when_it_starts(tokenizer):
    """vLLM's engine makes its `StructuredOutputManager` before it freezes its start-up heap
    (`gc.freeze`). A server whose backend is grammask builds the backend there, with the
    vocabulary's tables and the compiled kernels (about 76,000 objects for the collector): frozen
    with the rest, no full collection scans them, and the first request does not wait for them.
    Another backend's server builds none."""
    model = ModelConfig(model=os.environ["GRAMMASK_VLLM_MODEL"])
    manager = StructuredOutputManager(
        VllmConfig(model_config=model, structured_outputs_config=StructuredOutputsConfig(backend="grammask"))
    )
    assert isinstance(manager.backend, backend.GrammaskBackend)
    vocab = manager.backend.vocab
    assert vocab.size == model.get_vocab_size()
    assert vocab in tables._tables  # built already, and kept while the vocabulary lives
    other = StructuredOutputManager(
        VllmConfig(model_config=model, structured_outputs_config=StructuredOutputsConfig(backend="xgrammar"))
    )
    assert other.backend is None


def test_a_request_grammar_over_the_compile_deadline_fails_alone(vocab, monkeypatch):
    """vLLM compiles a request's grammar in a thread of the engine's process and fails only that
    request when the compile raises: the backend compiles under `COMPILE_TIMEOUT_S` (or the
    environment's `GRAMMASK_COMPILE_TIMEOUT_S`), as `grammask serve` does."""
    assert backend._limits().compile_timeout_s == backend.COMPILE_TIMEOUT_S
    monkeypatch.setenv("GRAMMASK_COMPILE_TIMEOUT_S", "0")
    assert backend._limits().compile_timeout_s is None
    monkeypatch.setenv("GRAMMASK_COMPILE_TIMEOUT_S", "thirty")
    with pytest.raises(ValueError, match="GRAMMASK_COMPILE_TIMEOUT_S is a number of seconds"):
        backend._limits()
    monkeypatch.setenv("GRAMMASK_COMPILE_TIMEOUT_S", "0.001")
    gb = backend.GrammaskBackend.__new__(backend.GrammaskBackend)
    gb.vocab, gb.compact, gb.vocab_size, gb.limits = vocab, False, vocab.size, backend._limits()
    schema = {
        "type": "object",
        "properties": {f"field_{i}": {"type": "string", "pattern": f"^[a-z]{{{i}}}$"} for i in range(1, 200)},
    }
    with pytest.raises(grammask.GrammarError, match="compile_timeout_s=0.001"):
        gb.compile_grammar(StructuredOutputOptions.JSON, json.dumps(schema))
