import gc

import pytest

from grammask.collector import paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_holds_the_collector_off_and_turns_it_on_again(collector_on):
    with paused():
        assert not gc.isenabled()
        with paused():  # nested, as a lexeme's compile inside a grammar's
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_paused_turns_the_collector_on_again_after_an_error(collector_on):
    with pytest.raises(ValueError), paused():
        raise ValueError
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off(collector_on):
    gc.disable()
    with paused():
        pass
    assert not gc.isenabled()
