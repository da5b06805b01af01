"""`EngineWorker`: tasks run in a child process; timeouts, crashes and exceptions are outcomes."""

from __future__ import annotations

import os
import time

import pytest

from grammask import assets
from grammask.bench.workers import Context, EngineWorker


def _vocab_size(context: Context) -> tuple[str, int]:
    return context.engine.name, context.vocab.size


def _sleep(context: Context, seconds: float) -> None:
    time.sleep(seconds)


def _fail(context: Context) -> None:
    raise KeyError("no such rule")


def _die(context: Context) -> None:
    os._exit(3)


@pytest.fixture(scope="module")
def worker():
    with EngineWorker("grammask", assets.vocab_gguf_path("llama-bpe")) as w:
        assert w.start() is None
        yield w


def test_task_result_comes_back(worker: EngineWorker) -> None:
    out = worker.call(_vocab_size, timeout=30)
    assert (out.status, out.value) == ("ok", ("grammask", 128256))
    assert worker.load_s is not None and worker.load_s[0] > 0
    assert worker.version


def test_exception_is_reported_and_worker_survives(worker: EngineWorker) -> None:
    out = worker.call(_fail, timeout=30)
    assert out.status == "exception" and "KeyError: 'no such rule'" in out.error
    restarts = worker.restarts
    assert worker.call(_vocab_size, timeout=30).status == "ok"
    assert worker.restarts == restarts


def test_timeout_kills_and_next_call_restarts(worker: EngineWorker) -> None:
    restarts = worker.restarts
    started = time.perf_counter()
    out = worker.call(_sleep, 30.0, timeout=0.5)
    assert out.status == "timeout" and time.perf_counter() - started < 10
    assert worker.call(_vocab_size, timeout=60).status == "ok"
    assert worker.restarts == restarts + 1


def test_crash_is_reported(worker: EngineWorker) -> None:
    out = worker.call(_die, timeout=30)
    assert out.status == "crash" and "exit code 3" in out.error
    assert worker.call(_vocab_size, timeout=60).status == "ok"


def test_missing_engine_cannot_start(tmp_path) -> None:
    with EngineWorker("grammask", tmp_path / "missing.gguf") as w:
        reason = w.start()
    assert reason is not None and "missing.gguf" in reason
