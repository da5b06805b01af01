"""One adapter per engine (grammask, llguidance, XGrammar) behind a common three-call interface.

Every adapter is built from the same `grammask.Vocabulary` (token bytes, EOS and special ids), so
the three engines mask the same 128,256 tokens. Peers are imported lazily: a missing one raises
`EngineUnavailable` and the benchmark goes on without it. Engines run single-threaded (the
caller sets the thread variables in `THREAD_ENV` before any engine is imported).

A format error surfaces as `CompileError`; anything else an engine raises is left to propagate,
so the benchmark can tell "the engine refused this grammar" from "the engine broke".
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:  # grammask's core is imported by the adapter, inside the worker process
    from grammask.vocab import Vocabulary

__all__ = [
    "ENGINES",
    "FORMATS",
    "THREAD_ENV",
    "CompileError",
    "Compiled",
    "Engine",
    "EngineUnavailable",
    "Session",
    "engine_available",
    "load_engine",
]

ENGINES = ("grammask", "llguidance", "xgrammar")
FORMATS = ("regex", "gbnf", "json_schema")

#: Thread-pool sizes pinned to one, for every runtime an engine may use underneath.
THREAD_ENV = {
    "RAYON_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


class EngineUnavailable(RuntimeError):
    """The engine's package is not installed (or cannot load)."""


class CompileError(Exception):
    """The engine rejected the grammar (malformed, unsupported, or over a limit)."""


class Session(Protocol):
    """One sequence being decoded: the calls the benchmark times."""

    def fill(self, bitmask: np.ndarray) -> None: ...  # row 0 of an int32 [1, words] bitmask
    def advance(self, token: int) -> bool: ...


class Compiled(Protocol):
    def session(self) -> Session: ...


class Engine(Protocol):
    name: str
    version: str

    def compile(self, fmt: str, source: Any) -> Compiled: ...

    # One call that fills row i of an int32 [len(sessions), words] bitmask from sessions[i], the
    # engine's own batch API where it has one.
    def batch_filler(self, sessions: list[Any]) -> Callable[[np.ndarray], None]: ...


def engine_available(name: str) -> bool:
    return name == "grammask" or importlib.util.find_spec(name) is not None


def load_engine(name: str, vocab: Vocabulary, encode: Callable[[bytes], list[int]] | None = None) -> Engine:
    """The adapter `name` over `vocab` (a `grammask.Vocabulary`). llguidance also needs `encode`,
    raw bytes -> token ids, for its forced text (it plays no part in masks)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; expected one of {', '.join(ENGINES)}")
    if name == "llguidance" and encode is None:
        raise ValueError("llguidance needs `encode` (a tokenizer for raw bytes)")
    if not engine_available(name):
        raise EngineUnavailable(f"{name} is not installed (pip install {name}); skipping it")
    if name == "grammask":
        return _Grammask(vocab)
    if name == "llguidance":
        assert encode is not None
        return _LLGuidance(vocab, encode)
    return _XGrammar(vocab)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


class _Grammask:
    name = "grammask"

    def __init__(self, vocab: Vocabulary) -> None:
        import grammask

        self._grammask = grammask
        self._vocab = vocab
        self.version = metadata.version("grammask")
        # Build the vocabulary's derived structures now (trie, the engine's per-vocabulary tables
        # and kernels), as the peers do when given a tokenizer, so that the first grammar's TTFM
        # does not pay for them.
        from grammask.engine.tables import tables_for

        _ = vocab.fingerprint
        tables_for(vocab)

    def compile(self, fmt: str, source: Any) -> Compiled:
        _check_format(fmt)
        g = self._grammask
        build = {
            "regex": g.Grammar.from_regex,
            "gbnf": g.Grammar.from_ebnf,
            "json_schema": g.Grammar.from_json_schema,
        }
        try:
            compiled = g.compile(build[fmt](source), self._vocab)
        except g.GrammarError as exc:
            raise CompileError(str(exc)) from None
        return _GrammaskCompiled(compiled)

    def batch_filler(self, sessions: list[Any]) -> Callable[[np.ndarray], None]:
        return self._grammask.BatchMatcher([s.matcher for s in sessions]).fill_bitmask


class _GrammaskCompiled:
    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled

    def session(self) -> Session:
        return _GrammaskSession(self._compiled.matcher())


class _GrammaskSession:
    __slots__ = ("advance", "matcher", "_fill")

    def __init__(self, matcher: Any) -> None:
        self.matcher = matcher
        self._fill = matcher.fill_bitmask
        self.advance = matcher.advance

    def fill(self, bitmask: np.ndarray) -> None:
        self._fill(bitmask, 0)


class _TokenizerSource:
    """The duck-typed tokenizer `llguidance.TokenizerWrapper` reads its vocabulary from."""

    def __init__(self, vocab: Vocabulary, encode: Callable[[bytes], list[int]]) -> None:
        eos = sorted(int(t) for t in vocab.eos_ids)
        self.eos_token_id = eos[0]
        self.bos_token_id = None
        self.tokens = list(vocab.token_bytes)
        self.special_token_ids = sorted(int(t) for t in vocab.special_ids)
        self._encode = encode

    def __call__(self, data: bytes) -> list[int]:
        return self._encode(data)


class _LLGuidance:
    name = "llguidance"

    def __init__(self, vocab: Vocabulary, encode: Callable[[bytes], list[int]]) -> None:
        import llguidance
        import llguidance.numpy

        self._llg = llguidance
        self._fill_into = llguidance.numpy.fill_next_token_bitmask
        self._fill_par = llguidance.numpy.fill_next_token_bitmask_par
        self._executor = llguidance.LLExecutor(num_threads=1)
        self.version = metadata.version("llguidance")
        wrapper = llguidance.TokenizerWrapper(_TokenizerSource(vocab, encode))
        eos = sorted(int(t) for t in vocab.eos_ids)
        self._tokenizer = llguidance.LLTokenizer(wrapper, n_vocab=vocab.size, eos_token=eos)

    def compile(self, fmt: str, source: Any) -> Compiled:
        _check_format(fmt)
        llg = self._llg
        try:
            if fmt == "regex":
                grammar = llg.LLMatcher.grammar_from_regex(source)
            elif fmt == "gbnf":
                grammar = llg.grammar_from("gbnf", source)
            else:
                grammar = llg.LLMatcher.grammar_from_json_schema(source)
        except ValueError as exc:
            raise CompileError(str(exc)) from None
        matcher = llg.LLMatcher(self._tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise CompileError(matcher.get_error())
        return _LLGuidanceCompiled(matcher, self._fill_into)

    def batch_filler(self, sessions: list[Any]) -> Callable[[np.ndarray], None]:
        rows = [(s.matcher, i) for i, s in enumerate(sessions)]
        executor, fill_par = self._executor, self._fill_par
        return lambda bitmask: fill_par(executor, rows, bitmask)


class _LLGuidanceCompiled:
    """A fresh matcher kept as a template; each session is a deep copy (building is compiling)."""

    def __init__(self, template: Any, fill_into: Callable[[Any, np.ndarray, int], None]) -> None:
        self._template = template
        self._fill_into = fill_into
        self._used = False

    def session(self) -> Session:
        matcher = self._template.deep_copy() if self._used else self._template
        self._used = True
        return _LLGuidanceSession(matcher, self._fill_into)


class _LLGuidanceSession:
    __slots__ = ("advance", "matcher", "_fill_into")

    def __init__(self, matcher: Any, fill_into: Callable[[Any, np.ndarray, int], None]) -> None:
        self.matcher = matcher
        self._fill_into = fill_into
        self.advance = matcher.consume_token

    def fill(self, bitmask: np.ndarray) -> None:
        self._fill_into(self.matcher, bitmask, 0)


# XGrammar's EBNF parser refuses an empty first alternative (`ws ::= | " "`, as in llama.cpp's
# json.gbnf); `""` says the same thing in a form it accepts.
_EMPTY_FIRST_ALT = re.compile(r"(::=\s*)\|")


class _XGrammar:
    name = "xgrammar"

    def __init__(self, vocab: Vocabulary) -> None:
        import xgrammar

        self._xgr = xgrammar
        self.version = metadata.version("xgrammar")
        special = {int(t) for t in vocab.special_ids}
        eos = sorted(int(t) for t in vocab.eos_ids)
        # XGrammar treats an empty token as special: it never matches grammar text.
        encoded = [b"" if i in special else bytes(t) for i, t in enumerate(vocab.token_bytes)]
        info = xgrammar.TokenizerInfo(encoded, xgrammar.VocabType.RAW, vocab_size=vocab.size, stop_token_ids=eos)
        self._compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)

    def compile(self, fmt: str, source: Any) -> Compiled:
        _check_format(fmt)
        xgr = self._xgr
        try:
            if fmt == "regex":
                compiled = self._compiler.compile_regex(source)
            elif fmt == "gbnf":
                grammar = xgr.Grammar.from_ebnf(_EMPTY_FIRST_ALT.sub(r'\1"" |', source))
                compiled = self._compiler.compile_grammar(grammar)
            else:
                compiled = self._compiler.compile_json_schema(source, any_whitespace=True, strict_mode=False)
        except (RuntimeError, ValueError) as exc:
            raise CompileError(str(exc)) from None
        return _XGrammarCompiled(compiled, xgr.GrammarMatcher)

    def batch_filler(self, sessions: list[Any]) -> Callable[[np.ndarray], None]:
        fills = [s.fill_row for s in sessions]  # XGrammar's Python API fills one row per call

        def fill(bitmask: np.ndarray) -> None:
            for i, fill_row in enumerate(fills):
                fill_row(bitmask, i)

        return fill


class _XGrammarCompiled:
    def __init__(self, compiled: Any, matcher_type: Any) -> None:
        self._compiled = compiled
        self._matcher_type = matcher_type

    def session(self) -> Session:
        return _XGrammarSession(self._matcher_type(self._compiled))


class _XGrammarSession:
    __slots__ = ("advance", "fill_row")

    def __init__(self, matcher: Any) -> None:
        self.fill_row = matcher.fill_next_token_bitmask
        self.advance = matcher.accept_token

    def fill(self, bitmask: np.ndarray) -> None:
        self.fill_row(bitmask, 0)
