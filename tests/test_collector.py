"""`paused`: the garbage collector is off inside and as it was afterwards; compiles run inside."""

import gc

import pytest

import grammask
from grammask.collector import paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_turns_the_collector_off_and_on_again(collector_on) -> None:
    with paused():
        assert not gc.isenabled()
        with paused():  # nested: the outer block turns it on again
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), paused():
        raise ValueError
    assert gc.isenabled()


def test_a_collector_turned_off_stays_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def _collections(build) -> int:
    """How many collections run while `build()` runs."""
    started: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.collect()
    gc.callbacks.append(seen)
    try:
        build()
    finally:
        gc.callbacks.remove(seen)
    return len(started)


def test_a_grammar_is_compiled_with_the_collector_paused(collector_on, vocab_llama3) -> None:
    """The front-end (not paused) makes enough objects for several collections; the compile, as
    many more, runs none but the one its pause defers to its end."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": ["string", "integer"]} for i in range(60)}}
    assert _collections(lambda: grammask.Grammar.from_json_schema(schema)) >= 3
    grammar = grammask.Grammar.from_json_schema(schema)
    assert _collections(lambda: grammask.compile(grammar, vocab_llama3)) <= 1
    assert gc.isenabled()
