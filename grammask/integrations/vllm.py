"""grammask as a vLLM structured-output backend: `--structured-outputs-config.backend grammask`.

vLLM has no entry point for backends, so `register()` (run in every vLLM process through the
`vllm.general_plugins` entry point `grammask`) teaches vLLM the name:

- `StructuredOutputsConfig.backend` accepts "grammask" (its `Literal` is extended and the pydantic
  dataclass rebuilt), and its check that only xgrammar and guidance take `disable_any_whitespace`
  lets grammask through;
- `SamplingParams._validate_structured_outputs` builds the request's grammar with grammask in the
  front-end process, so a bad format is an HTTP 400 and never reaches the engine;
- `StructuredOutputManager` creates its `GrammaskBackend` when the engine starts, if the server's
  backend is grammask (for the first grammask request otherwise, in `grammar_init`). The backend
  builds the vocabulary's tables and loads the compiled kernels then: vLLM freezes its start-up
  heap right after (`gc.freeze`), so full collections never scan them, and no request waits for
  them.

All patching is here, pinned to the vLLM versions it was tested with (`SUPPORTED_VERSIONS`); it
checks every internal it touches and raises `RuntimeError` when one has moved. Offline `LLM(...)`
builds its configuration before plugins load: call `register()` before creating it.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
import typing
from typing import Any

import torch
import vllm
from pydantic.dataclasses import rebuild_dataclass
from vllm.config.structured_outputs import StructuredOutputsConfig
from vllm.exceptions import VLLMValidationError
from vllm.sampling_params import SamplingParams, StructuredOutputsParams
from vllm.v1.structured_output import StructuredOutputManager
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)
from vllm.v1.structured_output.request import get_structured_output_key

import grammask
from grammask import Grammar
from grammask.errors import GrammaskError
from grammask.integrations.structured_outputs import grammar_for
from grammask.limits import DEFAULT_LIMITS, Limits
from grammask.vocab import Vocabulary

__all__ = ["SUPPORTED_VERSIONS", "GrammaskBackend", "GrammaskGrammar", "build_grammar", "register"]

NAME = "grammask"
#: Seconds one request's grammar may take to compile, as in `grammask serve` (environment variable
#: `GRAMMASK_COMPILE_TIMEOUT_S`; 0 for none). vLLM compiles in a thread of the engine's process, so
#: a compile slows the engine loop while it runs; past this the request alone fails.
COMPILE_TIMEOUT_S = 30.0
#: vLLM release series this module was tested with; others raise unless `register(force=True)`.
SUPPORTED_VERSIONS = ("0.32.",)

logger = logging.getLogger(__name__)


def build_grammar(
    request_type: StructuredOutputOptions, spec: str, *, compact: bool = False, limits: Limits = DEFAULT_LIMITS
) -> Grammar:
    """The grammask grammar of one vLLM structured-output request (`compact`: no JSON whitespace).

    JSON Schemas are strict (a missing `additionalProperties` means false), as in xgrammar.
    """
    return grammar_for(request_type.name.lower(), spec, compact=compact, limits=limits)


def _limits() -> Limits:
    """The limits a request's grammar is built and compiled under: `COMPILE_TIMEOUT_S`, or the
    environment's `GRAMMASK_COMPILE_TIMEOUT_S` (`register` checks it when vLLM starts)."""
    value = os.environ.get("GRAMMASK_COMPILE_TIMEOUT_S", str(COMPILE_TIMEOUT_S))
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"GRAMMASK_COMPILE_TIMEOUT_S is a number of seconds (0 for none), not {value!r}") from None
    return dataclasses.replace(DEFAULT_LIMITS, compile_timeout_s=seconds if seconds > 0 else None)


# -- the backend and the per-request grammar ---------------------------------------------------------

_vocabularies: dict[tuple[int, int], tuple[Any, Vocabulary]] = {}


def _vocabulary(tokenizer: Any, vocab_size: int) -> Vocabulary:
    """The vocabulary of `tokenizer` with logits `vocab_size` wide, built once per tokenizer."""
    key = (id(tokenizer), vocab_size)
    found = _vocabularies.get(key)
    if found is None:
        found = _vocabularies[key] = (tokenizer, Vocabulary.from_huggingface(tokenizer).with_size(vocab_size))
    return found[1]


@dataclasses.dataclass
class GrammaskGrammar(StructuredOutputGrammar):
    """One request's matcher, with the bookkeeping vLLM expects (as its xgrammar backend does)."""

    matcher: grammask.Matcher
    num_processed_tokens: int = 0
    _is_terminated: bool = False

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advance by `tokens`; tokens after the end are ignored. False if one is not allowed."""
        if self._is_terminated:
            return True
        for token in tokens:
            if not self.matcher.advance(token):
                logger.error("grammask rejected token %s for request %s", token, request_id)
                return False
            self.num_processed_tokens += 1
            if self.matcher.is_terminated():
                self._is_terminated = True
                break
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of `tokens` the grammar accepts; the state is unchanged."""
        return [] if self._is_terminated else tokens[: self.matcher.validate_tokens(tokens)]

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens
        self._is_terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        self.matcher.fill_bitmask(bitmask, batch_index)

    def is_terminated(self) -> bool:
        return self._is_terminated

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._is_terminated = False


@dataclasses.dataclass
class GrammaskBackend(StructuredOutputBackend):
    """Compiles vLLM's structured-output requests with grammask (vLLM runs this off the engine loop)."""

    def __post_init__(self) -> None:
        config = self.vllm_config.structured_outputs_config
        self.compact = bool(config.disable_any_whitespace)
        self.vocab = _vocabulary(self.tokenizer, self.vocab_size)
        self.limits = _limits()
        # The vocabulary's tables and the compiled kernels now, as `grammask serve` builds them
        # at start: not in the first request's compile.
        grammask.compile(Grammar.json(), self.vocab)

    def compile_grammar(
        self, request_type: StructuredOutputOptions, grammar_spec: str, stop_token_ids: set[int] | None = None
    ) -> StructuredOutputGrammar:
        grammar = build_grammar(request_type, grammar_spec, compact=self.compact, limits=self.limits)
        compiled = grammask.compile(grammar, self.vocab, limits=self.limits)
        return GrammaskGrammar(compiled.matcher(stop_token_ids=stop_token_ids or None))

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        _vocabularies.clear()


# -- registration -----------------------------------------------------------------------------------

_registered = False


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise RuntimeError(
            f"grammask cannot register with vLLM {vllm.__version__}: {what}. vLLM's internals have moved; "
            f"grammask.integrations.vllm supports vLLM {', '.join(v + 'x' for v in SUPPORTED_VERSIONS)}."
        )


def _validate(self: SamplingParams, model_config: Any, config: StructuredOutputsConfig | None, tokenizer: Any) -> None:
    """`SamplingParams._validate_structured_outputs` for the grammask backend: builds the grammar,
    so that every error in the format is an HTTP 400."""
    params = self.structured_outputs
    assert params is not None and config is not None
    if params._backend not in (None, NAME):
        raise VLLMValidationError(
            f"Request-level structured output backend selection is not supported: the request asks for "
            f"{params._backend!r}, the server runs {NAME!r}."
        )
    params._backend = NAME
    if tokenizer is None:
        raise VLLMValidationError("Structured outputs need a tokenizer: they cannot be used with skip_tokenizer_init")
    if params.whitespace_pattern is not None:
        raise VLLMValidationError(
            "the grammask backend does not support whitespace_pattern; start the server with "
            "--structured-outputs-config.disable_any_whitespace true for compact JSON",
            parameter="whitespace_pattern",
        )
    try:
        request_type, spec = get_structured_output_key(params)
        build_grammar(request_type, spec, compact=bool(config.disable_any_whitespace), limits=_limits())
    except (GrammaskError, ValueError) as exc:
        raise VLLMValidationError(f"grammask cannot use this structured output format: {exc}") from exc


def register(*, force: bool = False) -> None:
    """Make "grammask" a structured-output backend of this vLLM process (idempotent).

    `force` skips the version pin (the internals are still checked).
    """
    global _registered
    if _registered:
        return
    _require(force or vllm.__version__.startswith(SUPPORTED_VERSIONS), "this vLLM version is not supported")
    _limits()  # a malformed GRAMMASK_COMPILE_TIMEOUT_S fails here, when vLLM starts, not in requests

    # 1. The config accepts the name.
    backend_type = StructuredOutputsConfig.__annotations__.get("backend")
    names = typing.get_args(backend_type)
    _require(
        typing.get_origin(backend_type) is typing.Literal and "xgrammar" in names,
        "StructuredOutputsConfig.backend is no longer a Literal of backend names",
    )
    validators = StructuredOutputsConfig.__pydantic_decorators__.model_validators
    check = validators.get("_validate_structured_output_config")
    _require(check is not None, "StructuredOutputsConfig has no _validate_structured_output_config")
    original_check = check.func

    def validate_config(self: StructuredOutputsConfig) -> StructuredOutputsConfig:
        return self if self.backend == NAME else original_check(self)

    StructuredOutputsConfig.__annotations__["backend"] = typing.Literal[names + (NAME,)]
    StructuredOutputsConfig.__dataclass_fields__["backend"].type = StructuredOutputsConfig.__annotations__["backend"]
    validators["_validate_structured_output_config"] = dataclasses.replace(check, func=validate_config)
    rebuild_dataclass(StructuredOutputsConfig, force=True)

    # 2. Requests are validated with grammask in the front-end process.
    original_validate = SamplingParams._validate_structured_outputs
    _require(
        list(inspect.signature(original_validate).parameters)
        == ["self", "model_config", "structured_outputs_config", "tokenizer"],
        "SamplingParams._validate_structured_outputs changed its signature",
    )
    _require(
        {"whitespace_pattern", "_backend"} <= {f.name for f in dataclasses.fields(StructuredOutputsParams)},
        "StructuredOutputsParams changed its fields",
    )

    def validate_request(self: SamplingParams, model_config: Any, config: Any, tokenizer: Any) -> None:
        if config is None or self.structured_outputs is None or config.backend != NAME:
            return original_validate(self, model_config, config, tokenizer)
        return _validate(self, model_config, config, tokenizer)

    SamplingParams._validate_structured_outputs = validate_request

    # 3. The engine builds its GrammaskBackend when it starts (before vLLM freezes its start-up
    # heap) where grammask is the server's backend, and for the first grammask request otherwise.
    original_manager_init = StructuredOutputManager.__init__
    original_init = StructuredOutputManager.grammar_init
    _require(
        list(inspect.signature(original_manager_init).parameters) == ["self", "vllm_config"],
        "StructuredOutputManager.__init__ changed its signature",
    )
    _require(
        list(inspect.signature(original_init).parameters) == ["self", "request"]
        and "self.backend is None" in inspect.getsource(original_init),
        "StructuredOutputManager.grammar_init changed",
    )

    def make_backend(self: StructuredOutputManager) -> None:
        self.backend = GrammaskBackend(
            self.vllm_config, tokenizer=self.tokenizer, vocab_size=self.vllm_config.model_config.get_vocab_size()
        )

    def manager_init(self: StructuredOutputManager, vllm_config: Any) -> None:
        original_manager_init(self, vllm_config)
        model = vllm_config.model_config
        if vllm_config.structured_outputs_config.backend == NAME and not model.skip_tokenizer_init:
            make_backend(self)

    def grammar_init(self: StructuredOutputManager, request: Any) -> None:
        params = request.sampling_params.structured_outputs if request.sampling_params else None
        if self.backend is None and params is not None and params._backend == NAME:
            make_backend(self)
        return original_init(self, request)

    StructuredOutputManager.__init__ = manager_init
    StructuredOutputManager.grammar_init = grammar_init
    _registered = True
