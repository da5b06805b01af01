"""Run one engine in a child process, so a hang or a crash costs one grammar, not the benchmark.

The child loads the vocabulary and the engine once (that load is timed and reported), then runs
tasks sent to it: a task is a module-level function `task(context, *args)` whose result is
pickled back. A task over its time limit gets the child killed; a child that dies is reported as
a crash; either way the next task starts a fresh child.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grammask.bench.engines import THREAD_ENV, Engine, load_engine

if TYPE_CHECKING:
    from grammask.vocab import Vocabulary

__all__ = ["Context", "EngineWorker", "Outcome", "load_context"]

#: Seconds a child may take to import its engine and load the vocabulary.
_START_TIMEOUT = 600.0
#: Failed starts in a row after which a worker stops trying (its engine is broken, not one grammar).
_MAX_FAILED_STARTS = 3


@dataclass
class Context:
    """What a task gets: the engine, the grammask vocabulary, and what loading them cost."""

    engine: Engine
    vocab: Vocabulary
    vocab_load_s: float
    engine_load_s: float


@dataclass
class Outcome:
    """`status` is "ok" (with `value`), "exception" (`error` holds the traceback), "timeout" or "crash"."""

    status: str
    value: Any = None
    error: str = ""


def load_context(engine_name: str, gguf_path: str | Path) -> Context:
    """Load the vocabulary and the engine `engine_name` over it, timing both."""
    import grammask
    from grammask.bench.tokenize import Llama3Tokenizer

    t0 = time.perf_counter()
    vocab = grammask.Vocabulary.from_gguf(gguf_path)
    t1 = time.perf_counter()
    encode = Llama3Tokenizer(gguf_path).encode_bytes if engine_name == "llguidance" else None
    engine = load_engine(engine_name, vocab, encode)
    t2 = time.perf_counter()
    return Context(engine, vocab, t1 - t0, t2 - t1)


def _child(conn: Connection, engine_name: str, gguf_path: str) -> None:
    os.environ.update(THREAD_ENV)
    try:
        context = load_context(engine_name, gguf_path)
    except Exception as exc:  # reported to the parent, which skips the engine
        conn.send(("unavailable", f"{type(exc).__name__}: {exc}"))
        return
    # As a serving process does after loading (grammask serve, vLLM): what was loaded lives as long
    # as the process, so it leaves the collector's generations and full collections skip it.
    gc.collect()
    gc.freeze()
    conn.send(("ready", (context.engine.version, context.vocab_load_s, context.engine_load_s)))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        task, args = message
        try:
            conn.send(("ok", task(context, *args)))
        except Exception:
            conn.send(("exception", traceback.format_exc(limit=8)))


def _peak_rss_mb(context: Context) -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class EngineWorker:
    """A child process running one engine; restarted after a timeout or crash."""

    def __init__(self, engine_name: str, gguf_path: str | Path) -> None:
        self.engine_name = engine_name
        self._gguf_path = str(gguf_path)
        self._ctx = mp.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        #: Filled by `start`: engine version, vocabulary load and engine load seconds (first start).
        self.version = ""
        self.load_s: tuple[float, float] | None = None
        self.restarts = 0
        self._failed_starts = 0
        self._last_failure = ""

    def start(self) -> str | None:
        """Start the child if it is not running; the reason it cannot run, or None."""
        if self._process is not None and self._process.is_alive():
            return None
        if self._failed_starts >= _MAX_FAILED_STARTS:
            return f"gave up after {self._failed_starts} failed starts: {self._last_failure}"
        reason = self._spawn()
        if reason is None:
            self._failed_starts = 0
        else:
            self._failed_starts += 1
            self._last_failure = reason
        return reason

    def _spawn(self) -> str | None:
        parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(target=_child, args=(child, self.engine_name, self._gguf_path), daemon=True)
        self._process.start()
        child.close()
        self._conn = parent
        if not parent.poll(_START_TIMEOUT):
            self._kill()
            return f"{self.engine_name} did not start within {_START_TIMEOUT:.0f} s"
        try:
            kind, payload = parent.recv()
        except EOFError:
            self._kill()
            return f"{self.engine_name} died while starting"
        if kind != "ready":
            self._kill()
            return str(payload)
        version, vocab_s, engine_s = payload
        if self.load_s is None:
            self.version, self.load_s = version, (vocab_s, engine_s)
        else:
            self.restarts += 1
        return None

    def call(self, task: Callable[..., Any], *args: Any, timeout: float) -> Outcome:
        """Run `task(context, *args)` in the child within `timeout` seconds."""
        reason = self.start()
        if reason is not None:
            return Outcome("crash", error=reason)
        assert self._conn is not None
        try:
            self._conn.send((task, args))
            if not self._conn.poll(timeout):
                self._kill()
                return Outcome("timeout", error=f"over {timeout:g} s")
            kind, payload = self._conn.recv()
        except (EOFError, OSError):
            self._process.join(timeout=5)
            code = self._process.exitcode
            self._kill()
            return Outcome("crash", error=f"worker died (exit code {code})")
        if kind == "ok":
            return Outcome("ok", value=payload)
        return Outcome("exception", error=payload)

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def peak_rss_mb(self) -> float | None:
        """The running child's peak resident memory (since its last start), in MiB."""
        if self._process is None or not self._process.is_alive():
            return None
        outcome = self.call(_peak_rss_mb, timeout=10)
        return outcome.value if outcome.status == "ok" else None

    def close(self) -> None:
        if self._process is not None and self._process.is_alive() and self._conn is not None:
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(timeout=5)
        self._kill()

    def __enter__(self) -> EngineWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
