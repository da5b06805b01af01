"""The matcher API: advance, rollback, copy, forced text, batches, threads."""

import threading

import numpy as np
import pytest

import grammask
from grammask.grammar import Grammar
from grammask.ir import regex as rx
from grammask.ir.grammar import lex, literal, ref, seq


def tokens_of(vocab, *pieces: str) -> list[int]:
    return [vocab.token_id(p) for p in pieces]


@pytest.fixture
def date_compiled(vocab_llama3):
    digit = rx.char_class([(48, 57)])
    date = rx.concat(
        rx.repeat(digit, 4, 4), rx.literal("-"), rx.repeat(digit, 2, 2), rx.literal("-"), rx.repeat(digit, 2, 2)
    )
    return grammask.compile(Grammar({"root": lex(date)}), vocab_llama3)


def test_advance_rejects_without_changing_state(date_compiled, vocab_llama3):
    m = date_compiled.matcher()
    before = m.allowed_token_ids()
    assert not m.advance(vocab_llama3.token_id("abc"))
    assert np.array_equal(before, m.allowed_token_ids())
    assert not m.advance(vocab_llama3.size + 5)
    assert not m.advance(vocab_llama3.eos_ids[0])


def test_full_sequence_and_eos(date_compiled, vocab_llama3):
    m = date_compiled.matcher()
    for t in tokens_of(vocab_llama3, "202", "4", "-", "12", "-", "31"):
        assert m.advance(t)
    assert m.can_finish() and not m.is_finished()
    assert set(m.allowed_token_ids().tolist()) == set(vocab_llama3.eos_ids)
    assert m.advance(vocab_llama3.eos_ids[0])
    assert m.is_finished() and not m.can_finish()
    assert not m.advance(vocab_llama3.token_id("1"))


def test_rollback_and_copy(date_compiled, vocab_llama3):
    m = date_compiled.matcher()
    ids = tokens_of(vocab_llama3, "202", "4", "-", "12")
    masks = []
    for t in ids:
        masks.append(m.allowed_token_ids())
        assert m.advance(t)
    twin = m.copy()
    m.rollback(3)
    assert np.array_equal(m.allowed_token_ids(), masks[1])
    assert twin.advance(vocab_llama3.token_id("-"))  # the copy kept its own state
    assert not m.advance(vocab_llama3.token_id("-"))
    with pytest.raises(ValueError):
        m.rollback(5)
    m.reset()
    assert np.array_equal(m.allowed_token_ids(), masks[0])


def test_rollback_32_tokens(vocab_llama3):
    compiled = grammask.compile(Grammar({"root": lex(rx.plus(rx.literal("a")))}), vocab_llama3)
    m = compiled.matcher()
    a = vocab_llama3.token_id("a")
    for _ in range(40):
        assert m.advance(a)
    m.rollback(32)
    assert m.advance(a)


def test_forced_text(vocab_llama3):
    g = Grammar(
        {
            "root": seq(
                literal('{"name": "'),
                lex(rx.plus(rx.char_class([(97, 122)]))),
                literal('", "age": '),
                ref("n"),
                literal("}"),
            ),
            "n": lex(rx.plus(rx.char_class([(48, 57)]))),
        }
    )
    m = grammask.compile(g, vocab_llama3).matcher()
    assert m.forced_bytes() == b'{"name": "'
    assert m.forced_text() == '{"name": "'
    forced = m.forced_tokens()
    assert (
        b"".join(vocab_llama3.token_bytes[t] for t in forced)
        == b'{"name": '[: len(b"".join(vocab_llama3.token_bytes[t] for t in forced))]
    )
    assert m.advance_bytes(b'{"name": "bob')
    assert m.forced_bytes() == b""
    assert m.advance_bytes(b'"')
    assert m.forced_bytes() == b', "age": '


def test_batch_matcher(date_compiled, vocab_llama3):
    other = grammask.compile(Grammar({"root": literal("yes")}), vocab_llama3)
    rows = [date_compiled.matcher(), None, other.matcher()]
    bitmask = grammask.allocate_bitmask(3, vocab_llama3.size)
    bitmask[:] = 0
    grammask.BatchMatcher(rows).fill_bitmask(bitmask)
    assert (bitmask[1] == -1).all()
    expected = grammask.allocate_bitmask(1, vocab_llama3.size)
    rows[0].fill_bitmask(expected)
    assert np.array_equal(bitmask[0], expected[0])
    assert vocab_llama3.token_id("yes") in rows[2].allowed_token_ids()


def _row_by_row(matchers, bitmask):
    for row, matcher in enumerate(matchers):
        if matcher is None:
            bitmask[row] = -1
        else:
            matcher.fill_bitmask(bitmask, row)


@pytest.mark.parametrize("padding", [0, 3])
def test_batch_matcher_writes_what_each_row_would(date_compiled, vocab_llama3, padding):
    """The batch's one copy (whole rows) and its row-by-row writes (padding words, rows without
    a grammar) give each row what its matcher writes alone; rows past the batch are left alone."""
    other = grammask.compile(Grammar({"root": literal("yes")}), vocab_llama3)
    words = (vocab_llama3.size + 31) // 32
    for rows in ([date_compiled.matcher(), other.matcher()], [other.matcher(), None, date_compiled.matcher()]):
        rows[0].advance(rows[0].allowed_token_ids()[0])
        expected = np.full((len(rows) + 1, words + padding), 7, dtype=np.int32)
        _row_by_row(rows, expected)
        batch = np.full_like(expected, 7)
        grammask.BatchMatcher(rows).fill_bitmask(batch)
        assert np.array_equal(batch, expected)
        assert (batch[-1] == 7).all()


def test_batch_matcher_torch(date_compiled, vocab_llama3):
    torch = pytest.importorskip("torch")
    rows = [date_compiled.matcher(), None]
    words = (vocab_llama3.size + 31) // 32
    expected = np.full((2, words + 2), 7, dtype=np.int32)
    _row_by_row(rows, expected)
    batch = torch.full((2, words + 2), 7, dtype=torch.int32)
    grammask.BatchMatcher(rows).fill_bitmask(batch)
    assert np.array_equal(batch.numpy(), expected)
    # A tensor on another device gets one staged copy; "meta" has no data, but checks the shapes.
    elsewhere = torch.empty((3, words + 2), dtype=torch.int32, device="meta")
    grammask.BatchMatcher(rows).fill_bitmask(elsewhere)
    rows[0].fill_bitmask(elsewhere, 2)


def test_batch_matcher_vocabularies_of_two_sizes(date_compiled, vocab_llama3, vocab_qwen2):
    """Rows of different widths are written one by one, each padded to the bitmask's width."""
    small = grammask.compile(Grammar({"root": literal("yes")}), vocab_qwen2)
    rows = [date_compiled.matcher(), small.matcher()]
    width = max((vocab_llama3.size + 31) // 32, (vocab_qwen2.size + 31) // 32)
    expected = np.full((2, width), 7, dtype=np.int32)
    _row_by_row(rows, expected)
    batch = np.full_like(expected, 7)
    grammask.BatchMatcher(rows).fill_bitmask(batch)
    assert np.array_equal(batch, expected)


def test_batch_matcher_refuses_a_narrow_bitmask(date_compiled, vocab_llama3):
    words = (vocab_llama3.size + 31) // 32
    rows = [None, date_compiled.matcher()]
    with pytest.raises(ValueError, match="words a row"):
        grammask.BatchMatcher(rows).fill_bitmask(np.zeros((2, words - 1), dtype=np.int32))
    empty = np.full((0, words), 7, dtype=np.int32)
    grammask.BatchMatcher([]).fill_bitmask(empty)  # no rows: nothing to write
    only_none = np.full((2, words), 7, dtype=np.int32)
    grammask.BatchMatcher([None, None]).fill_bitmask(only_none)
    assert (only_none == -1).all()


def test_matchers_in_threads(date_compiled, vocab_llama3):
    ids = tokens_of(vocab_llama3, "202", "4", "-", "12", "-", "31")
    reference = []
    m = date_compiled.matcher()
    for t in ids:
        reference.append(m.allowed_token_ids().tolist())
        m.advance(t)
    errors = []

    def run():
        m = date_compiled.matcher()
        for step, t in enumerate(ids):
            if m.allowed_token_ids().tolist() != reference[step] or not m.advance(t):
                errors.append(step)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_compile_is_cached(vocab_llama3):
    g1 = Grammar({"root": literal("x")})
    g2 = Grammar({"root": literal("x")})
    assert grammask.compile(g1, vocab_llama3) is grammask.compile(g2, vocab_llama3)


# -- the engine-facing API: validate_tokens, end sets, padded widths, accept_string, threads ------


def test_validate_tokens_leaves_state_unchanged(date_compiled, vocab_llama3):
    m = date_compiled.matcher()
    assert m.advance(vocab_llama3.token_id("202"))
    before = m.allowed_token_ids()
    good = tokens_of(vocab_llama3, "4", "-", "12", "-", "31")
    eos = vocab_llama3.eos_ids[0]
    assert m.validate_tokens(good + [eos, eos]) == len(good) + 1  # nothing follows the end token
    assert m.validate_tokens(good[:2] + tokens_of(vocab_llama3, "abc") + good[2:]) == 2
    assert m.validate_tokens([]) == 0
    assert m.validate_tokens([vocab_llama3.size + 3]) == 0
    assert np.array_equal(before, m.allowed_token_ids())
    for t in good:
        assert m.advance(t)


def test_stop_token_ids_replace_the_end_set(date_compiled, vocab_llama3):
    stop = vocab_llama3.token_id("!")  # an ordinary text token the date grammar never allows
    m = date_compiled.matcher(stop_token_ids=[stop])
    assert stop not in m.allowed_token_ids()
    for t in tokens_of(vocab_llama3, "202", "4", "-", "12", "-", "31"):
        assert m.advance(t)
    assert set(m.allowed_token_ids().tolist()) == {stop}  # the vocabulary's EOS is not an end here
    assert not m.advance(vocab_llama3.eos_ids[0])
    assert m.validate_tokens([stop, stop]) == 1
    assert m.advance(stop) and m.is_terminated()
    assert m.allowed_token_ids().tolist() == [stop]
    default = date_compiled.matcher()
    assert not default.is_terminated()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        date_compiled.matcher(stop_token_ids=[vocab_llama3.size])


def test_fill_bitmask_writes_padding_words(date_compiled, vocab_llama3):
    m = date_compiled.matcher()
    words = (vocab_llama3.size + 31) // 32
    wide = np.full((2, words + 5), -1, dtype=np.int32)
    m.fill_bitmask(wide, 1)
    assert (wide[1, words:] == 0).all() and (wide[0] == -1).all()
    exact = grammask.allocate_bitmask(1, vocab_llama3.size)
    m.fill_bitmask(exact)
    assert np.array_equal(wide[1, :words], exact[0])
    with pytest.raises(ValueError, match="words a row"):
        m.fill_bitmask(np.zeros((1, words - 1), dtype=np.int32))


def test_fill_bitmask_torch_padding(date_compiled, vocab_llama3):
    torch = pytest.importorskip("torch")
    m = date_compiled.matcher()
    words = (vocab_llama3.size + 31) // 32
    wide = torch.full((1, words + 3), -1, dtype=torch.int32)
    m.fill_bitmask(wide)
    assert (wide[0, words:] == 0).all()
    assert np.array_equal(wide[0, :words].numpy(), date_compiled.masks.mask(date_compiled.parser.initial))


def test_accept_string(date_compiled):
    m = date_compiled.matcher()
    assert m.accept_string("2024-")
    assert not m.accept_string("x")
    assert m.accept_string("12-31") and m.can_finish()


def test_json_matchers_in_eight_threads(vocab_llama3):
    compiled = grammask.compile(
        grammask.Grammar.from_json_schema(
            {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
        ),
        vocab_llama3,
    )
    text = ['{"', "a", '":', " [", "1", ",", " ", "2", ",", "3", "]}"]
    ids = tokens_of(vocab_llama3, *text)
    reference = []
    m = compiled.matcher()
    for t in ids:
        reference.append(m.allowed_token_ids().tolist())
        assert m.advance(t)
    errors: list[int] = []
    barrier = threading.Barrier(8)

    def run():
        strings = grammask.Grammar.from_json_schema({"type": "array", "items": {"type": "string"}})
        fresh = grammask.compile(strings, vocab_llama3)
        matchers = [compiled.matcher(), fresh.matcher()]
        barrier.wait()
        for step, t in enumerate(ids):
            if matchers[0].allowed_token_ids().tolist() != reference[step] or not matchers[0].advance(t):
                errors.append(step)
            bitmask = grammask.allocate_bitmask(1, vocab_llama3.size)
            matchers[1].fill_bitmask(bitmask)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
