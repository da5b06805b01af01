"""The GGUF metadata reader and the GGUF vocabulary loader, against llama.cpp's own test vectors."""

import numpy as np
import pytest

from grammask import assets
from grammask.errors import VocabularyError
from grammask.vocab import Vocabulary
from grammask.vocab.gguf import load_gguf_vocab, read_gguf_metadata

MODELS = assets.llama_cpp_vendor_dir() / "models"
SEPARATOR = b"\n__ggml_vocab_test__\n"
# bert-bge normalises its input (lowercase, accents stripped), so its tokens spell other text.
NORMALISING = {"bert-bge"}
VECTOR_VOCABS = sorted(
    p.name.removeprefix("ggml-vocab-").removesuffix(".gguf.inp") for p in MODELS.glob("ggml-vocab-*.gguf.inp")
)


def read_vectors(name: str) -> list[tuple[bytes, list[int]]]:
    """llama.cpp's tokenizer test vectors: inputs separated by a marker line in `.inp`, one line
    of space-separated token ids per input in `.out` (no BOS/EOS added)."""
    inp = (MODELS / f"ggml-vocab-{name}.gguf.inp").read_bytes()
    out = (MODELS / f"ggml-vocab-{name}.gguf.out").read_bytes()
    texts = inp.split(SEPARATOR)
    if inp.endswith(SEPARATOR):
        texts.pop()
    lines = out.split(b"\n")
    if out.endswith(b"\n"):
        lines.pop()
    assert len(texts) == len(lines) > 40
    return [(text, [int(t) for t in line.split()]) for text, line in zip(texts, lines, strict=True)]


def test_vector_files_found():
    assert {"llama-bpe", "qwen2", "llama-spm", "phi-3", "gemma-4", "gpt-2"} <= set(VECTOR_VOCABS)


@pytest.mark.parametrize("name", [n for n in VECTOR_VOCABS if n not in NORMALISING])
def test_token_bytes_spell_the_tokenized_text(name):
    """Concatenating the bytes of the tokens llama.cpp produced gives back the input exactly.

    SentencePiece tokenizers with a dummy prefix (`add_space_prefix`, on by default for the
    "llama" model) tokenize " " + text; the loader keeps `▁` as a real space, so the expected
    bytes get that space rather than the tokens losing it.
    """
    path = MODELS / f"ggml-vocab-{name}.gguf"
    vocab = Vocabulary.from_gguf(path)
    meta = read_gguf_metadata(path, skip={"tokenizer.ggml.tokens", "tokenizer.ggml.merges"})
    dummy_prefix = meta.get("tokenizer.ggml.add_space_prefix", meta["tokenizer.ggml.model"] == b"llama")
    for text, ids in read_vectors(name):
        expected = b" " + text if dummy_prefix and text else text
        assert b"".join(vocab.token_bytes[i] for i in ids) == expected, text
        assert not vocab.is_special[ids].any()


def test_metadata_values():
    meta = read_gguf_metadata(assets.vocab_gguf_path("llama-spm"))
    assert meta["tokenizer.ggml.model"] == b"llama"
    assert meta["tokenizer.ggml.eos_token_id"] == 2
    tokens = meta["tokenizer.ggml.tokens"]
    assert len(tokens) == 32000 and tokens[:3] == [b"<unk>", b"<s>", b"</s>"]
    types = meta["tokenizer.ggml.token_type"]
    assert isinstance(types, np.ndarray) and types.dtype == np.int32 and types[:4].tolist() == [2, 3, 3, 6]
    assert meta["tokenizer.ggml.scores"].dtype == np.float32


def test_skipped_keys_are_walked_not_kept():
    path = assets.vocab_gguf_path("gpt-2")
    full = read_gguf_metadata(path)
    partial = read_gguf_metadata(path, skip={"tokenizer.ggml.merges"})
    assert partial["tokenizer.ggml.merges"] is None and len(full["tokenizer.ggml.merges"]) > 40000
    assert partial.keys() == full.keys()
    assert partial["tokenizer.ggml.tokens"] == full["tokenizer.ggml.tokens"]


@pytest.mark.parametrize("cut", [3, 23, 1000, 300_000])
def test_truncated_file_is_a_vocabulary_error(tmp_path, cut):
    data = assets.vocab_gguf_path("llama-spm").read_bytes()
    path = tmp_path / "cut.gguf"
    path.write_bytes(data[:cut])
    with pytest.raises(VocabularyError, match="cut.gguf"):
        load_gguf_vocab(path)


@pytest.mark.parametrize("content", [b"", b"not a gguf file at all", b"GGUF\x01\x00\x00\x00" + bytes(16)])
def test_not_gguf(tmp_path, content):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(VocabularyError, match="bad.gguf"):
        read_gguf_metadata(path)


def test_unsupported_tokenizer_model(tmp_path):
    """A GGUF whose tokenizer.ggml.model grammask does not know is refused by name."""
    data = bytearray(assets.vocab_gguf_path("gpt-2").read_bytes())
    at = data.index(b"tokenizer.ggml.model") + len(b"tokenizer.ggml.model") + 4 + 8
    assert data[at : at + 4] == b"gpt2"
    data[at : at + 4] = b"rwkv"
    path = tmp_path / "rwkv.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(VocabularyError, match="unsupported tokenizer model 'rwkv'"):
        load_gguf_vocab(path)


def test_token_types_follow_llama_cpp(vocab_llama_spm, vocab_phi3, vocab_gemma4):
    v = vocab_llama_spm
    assert v.token_bytes[0] == b"<unk>" and v.is_special[0]  # UNKNOWN
    assert v.token_bytes[1] == b"<s>" and v.is_special[1]  # CONTROL
    assert v.token_bytes[3] == b"\x00" and v.token_bytes[3 + 0x0A] == b"\n"  # BYTE <0xNN>
    assert v.token_bytes[3 + 0xFF] == b"\xff" and not v.is_special[3 + 0xFF]
    raw = read_gguf_metadata(assets.vocab_gguf_path("llama-spm"))["tokenizer.ggml.tokens"]
    assert v.token_bytes[raw.index("▁the".encode())] == b" the"  # NORMAL: ▁ is a space
    # USER_DEFINED tokens are plain text written as-is (Phi-3 marks its </s> so).
    assert vocab_phi3.token_id("</s>") == 2
    assert not vocab_phi3.is_special[2] and vocab_phi3.trie.token_node[2] >= 0
    quote = vocab_gemma4.token_id('<|"|>')
    assert not vocab_gemma4.is_special[quote]
    # Phi-3's [PADnnnnn] placeholders are UNKNOWN: special, never text.
    assert vocab_phi3.token_bytes[32011] == b"[PAD32011]" and vocab_phi3.is_special[32011]


@pytest.mark.parametrize(
    ("fixture", "eos", "bos"),
    [
        # Llama 3.0: <|end_of_text|> (metadata eos) and <|eot_id|>; 128008 is a reserved token.
        ("vocab_llama3", {128001, 128009}, 128000),
        ("vocab_qwen2", {151643, 151645}, 151643),  # <|endoftext|>, <|im_end|>
        ("vocab_llama_spm", {2}, 1),
        ("vocab_phi3", {32000, 32007}, 1),  # <|endoftext|>, <|end|>
        ("vocab_gemma4", {1, 106}, 2),  # <eos>, <turn|>
        ("vocab_gpt2", {50256}, 50256),
    ],
)
def test_eos_and_bos(request, fixture, eos, bos):
    vocab = request.getfixturevalue(fixture)
    assert set(vocab.eos_ids) == eos
    assert vocab.bos_id == bos
    assert vocab.is_special[list(eos)].all()


def test_llama3_specials(vocab_llama3):
    assert vocab_llama3.token_bytes[128008] == b"<|reserved_special_token_4|>"
    assert vocab_llama3.special_ids.tolist() == list(range(128000, 128256))
    assert vocab_llama3.token_id("<|eot_id|>") == 128009
