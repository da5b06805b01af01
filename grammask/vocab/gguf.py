"""The vocabulary of a GGUF file (llama.cpp's model format), from its metadata alone.

GGUF starts with a header and a list of typed key/value pairs; the tokenizer lives there
(`tokenizer.ggml.tokens`, `.token_type`, `.model`, special ids). Reading stops before the tensor
infos, so a multi-gigabyte model costs only its metadata. Token types follow llama.cpp: CONTROL
and UNKNOWN tokens are special (their text is kept as their literal), USER_DEFINED tokens are
plain text written as-is, BYTE tokens are one raw byte, UNUSED tokens (and unknown types) are
empty and special.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Container
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from grammask.errors import VocabularyError
from grammask.vocab.decode import (
    LoadedVocab,
    byte_fallback_value,
    decode_byte_level,
    decode_metaspace,
    end_of_generation_ids,
)

__all__ = ["load_gguf_vocab", "read_gguf_metadata"]

_MAGIC = b"GGUF"

# GGUF value types: id -> (struct format, numpy dtype) for fixed-size scalars.
_NUMERIC: dict[int, tuple[str, str]] = {
    0: ("<B", "<u1"),
    1: ("<b", "<i1"),
    2: ("<H", "<u2"),
    3: ("<h", "<i2"),
    4: ("<I", "<u4"),
    5: ("<i", "<i4"),
    6: ("<f", "<f4"),
    7: ("<?", "?"),
    10: ("<Q", "<u8"),
    11: ("<q", "<i8"),
    12: ("<d", "<f8"),
}
_STRING = 8
_ARRAY = 9
_U64 = struct.Struct("<Q")


class _Cursor:
    """Sequential little-endian reads from a buffer, with GGUF's length-prefixed strings.

    The buffer is the mmap itself: slicing an mmap yields `bytes` in one step and
    `struct.unpack_from` reads it in place, which keeps the per-string loop cheap.
    """

    __slots__ = ("buf", "pos", "path")

    def __init__(self, buf: mmap.mmap, path: str) -> None:
        self.buf = buf
        self.pos = 0
        self.path = path

    def fail(self, what: str) -> VocabularyError:
        return VocabularyError(f"{self.path}: {what} at byte offset {self.pos}")

    def unpack(self, fmt: str) -> tuple:
        try:
            values = struct.unpack_from(fmt, self.buf, self.pos)
        except struct.error:
            raise self.fail("truncated GGUF file") from None
        self.pos += struct.calcsize(fmt)
        return values

    def strings(self, count: int, keep: bool) -> list[bytes]:
        """`count` strings in a row; skipped (only their lengths read) when not `keep`."""
        buf, pos = self.buf, self.pos
        unpack = _U64.unpack_from
        out: list[bytes] = []
        append = out.append
        try:
            if keep:
                for _ in range(count):
                    (n,) = unpack(buf, pos)
                    start = pos + 8
                    pos = start + n
                    append(buf[start:pos])
            else:
                for _ in range(count):
                    pos += 8 + unpack(buf, pos)[0]
        except struct.error:
            raise self.fail("truncated GGUF string array") from None
        if pos > len(buf):
            raise self.fail("truncated GGUF string array")
        self.pos = pos
        return out

    def value(self, vtype: int, keep: bool) -> Any:
        if vtype in _NUMERIC:
            return self.unpack(_NUMERIC[vtype][0])[0]
        if vtype == _STRING:
            return self.strings(1, True)[0]
        if vtype == _ARRAY:
            etype, count = self.unpack("<IQ")
            if etype == _STRING:
                return self.strings(count, keep)
            if etype in _NUMERIC:
                dtype = np.dtype(_NUMERIC[etype][1])
                start, self.pos = self.pos, self.pos + dtype.itemsize * count
                if self.pos > len(self.buf):
                    raise self.fail("truncated GGUF array")
                return np.frombuffer(self.buf, dtype, count, start).copy() if keep else None
            return [self.value(etype, keep) for _ in range(count)]
        raise self.fail(f"unknown GGUF value type {vtype}")


def read_gguf_metadata(path: str | PathLike[str], skip: Container[str] = ()) -> dict[str, Any]:
    """The metadata of the GGUF file at `path`, key -> value.

    Strings are `bytes`; numeric arrays are numpy arrays; string arrays are lists of `bytes`.
    Keys in `skip` are still walked over (GGUF has no index) but their values are dropped (None).
    Raises `VocabularyError` for a file that is not GGUF or is cut short.
    """
    name = str(path)
    with open(path, "rb") as f:
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise VocabularyError(f"{name}: not a GGUF file (empty)") from None
    with mm:
        return _read(_Cursor(mm, name), skip)


def _read(cur: _Cursor, skip: Container[str]) -> dict[str, Any]:
    (magic,) = cur.unpack("<4s")
    if magic != _MAGIC:
        raise VocabularyError(f"{cur.path}: not a GGUF file (magic {magic!r})")
    (version,) = cur.unpack("<I")
    if version not in (2, 3):  # v1 had 32-bit counts; a big-endian file shows a swapped number
        raise VocabularyError(f"{cur.path}: GGUF version {version} is not supported (2 and 3 are)")
    _n_tensors, n_kv = cur.unpack("<QQ")
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.strings(1, True)[0].decode("utf-8", "replace")
        (vtype,) = cur.unpack("<I")
        keep = key not in skip
        value = cur.value(vtype, keep)
        meta[key] = value if keep else None
    return meta


# llama.cpp's token types (tokenizer.ggml.token_type).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
# tokenizer.ggml.model values by how their pieces encode text.
_BYTE_LEVEL_MODELS = frozenset({"gpt2"})
_METASPACE_MODELS = frozenset({"llama", "gemma4", "t5", "bert"})
# Large keys the vocabulary never needs: walked over, not kept.
_UNUSED_KEYS = frozenset({"tokenizer.ggml.merges", "tokenizer.ggml.scores", "tokenizer.ggml.precompiled_charsmap"})


def load_gguf_vocab(path: str | PathLike[str]) -> LoadedVocab:
    """Token bytes, special ids and EOS ids of the GGUF file at `path`.

    EOS ids are the eos, eot and eom ids of the metadata plus the control or user-defined
    tokens whose text ends a turn (`decode.END_OF_GENERATION_TEXTS`), as llama.cpp does.
    Raises `VocabularyError` for a file without a vocabulary or of an unsupported tokenizer.
    """
    meta = read_gguf_metadata(path, skip=_UNUSED_KEYS)
    where = str(path)
    raw = meta.get("tokenizer.ggml.tokens")
    model_name = meta.get("tokenizer.ggml.model", b"").decode("utf-8", "replace")
    if not isinstance(raw, list) or not raw:
        raise VocabularyError(f"{where}: no tokenizer.ggml.tokens in the GGUF metadata")
    n = len(raw)
    types = meta.get("tokenizer.ggml.token_type")
    types = np.full(n, _NORMAL, np.int64) if types is None else np.asarray(types, np.int64)
    if len(types) != n:
        raise VocabularyError(f"{where}: {len(types)} token types for {n} tokens")

    if model_name in _BYTE_LEVEL_MODELS:
        text = decode_byte_level(raw)
    elif model_name in _METASPACE_MODELS:
        text = decode_metaspace(raw)
    else:
        raise VocabularyError(f"{where}: unsupported tokenizer model {model_name!r}")

    token_bytes = list(text)
    for i in np.flatnonzero(np.isin(types, (_UNKNOWN, _CONTROL, _USER_DEFINED))).tolist():
        token_bytes[i] = raw[i]  # written as-is
    for i in np.flatnonzero(types == _BYTE).tolist():
        value = byte_fallback_value(raw[i].decode("utf-8", "replace"))
        if value is None:
            raise VocabularyError(f"{where}: byte token {i} is {raw[i]!r}, not <0xNN>")
        token_bytes[i] = bytes([value])
    for i in np.flatnonzero(~np.isin(types, (_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _BYTE))).tolist():
        token_bytes[i] = b""  # UNUSED (and undefined types): llama.cpp renders nothing

    added = np.flatnonzero((types == _CONTROL) | (types == _USER_DEFINED)).tolist()
    eos = end_of_generation_ids({i: raw[i].decode("utf-8", "replace") for i in added})
    for key in ("eos", "eot", "eom"):
        token = meta.get(f"tokenizer.ggml.{key}_token_id")
        if token is not None and 0 <= token < n:
            eos.append(int(token))
    bos = meta.get("tokenizer.ggml.bos_token_id")
    special = np.flatnonzero(~np.isin(types, (_NORMAL, _USER_DEFINED, _BYTE))).tolist()
    return LoadedVocab(
        token_bytes=token_bytes,
        special_ids=special,
        eos_ids=eos,
        bos_id=None if bos is None or not 0 <= bos < n else int(bos),
        name=Path(path).stem,
    )
