"""Vocabularies from Hugging Face tokenizers: a `tokenizer.json` file, a `tokenizers.Tokenizer`,
or a transformers tokenizer. Nothing here imports transformers or tokenizers: objects are read
through their public methods.

How pieces become bytes follows the tokenizer's decoder: `ByteLevel` means the GPT-2 alphabet;
`Metaspace` or a `Replace` of `▁` means SentencePiece style, with `<0xNN>` pieces as raw bytes
when the model uses byte fallback. Added tokens are written as-is; those marked `special` are
special tokens. The decoder's cosmetic steps (stripping the dummy-prefix space of the first
token, cleaning up spaces) are not applied: every token keeps the exact bytes it contributes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import Any

from grammask.errors import VocabularyError
from grammask.vocab.decode import (
    LoadedVocab,
    byte_fallback_value,
    decode_byte_level,
    decode_metaspace,
    end_of_generation_ids,
)

__all__ = ["load_tokenizer", "load_tokenizer_json"]

_METASPACE = "\u2581"


def load_tokenizer_json(path: str | PathLike[str]) -> LoadedVocab:
    """The vocabulary of a `tokenizer.json`; EOS and BOS tokens also come from the
    `tokenizer_config.json` beside it when there is one."""
    path = Path(path)
    data = _read_json(path)
    config_path = path.with_name("tokenizer_config.json")
    config = _read_json(config_path) if config_path.exists() else {}
    return _from_tokenizer_data(
        data,
        eos_texts=[_token_text(config.get("eos_token"))],
        bos_text=_token_text(config.get("bos_token")),
        name=path.parent.name or path.stem,
    )


def load_tokenizer(tokenizer: Any) -> LoadedVocab:
    """The vocabulary of a transformers tokenizer (one backed by `tokenizers`, or a Python one
    of the byte-level or SentencePiece families) or of a `tokenizers.Tokenizer`."""
    name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None and hasattr(tokenizer, "to_str"):
        backend = tokenizer  # a tokenizers.Tokenizer
    if backend is not None:
        loaded = _from_tokenizer_data(json.loads(backend.to_str()), eos_texts=[], bos_text=None, name=name)
    elif hasattr(tokenizer, "convert_ids_to_tokens"):
        loaded = _from_python_tokenizer(tokenizer, name)
    else:
        raise VocabularyError(f"cannot read a vocabulary from a {type(tokenizer).__name__}")
    return _with_transformers_ids(loaded, tokenizer)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise VocabularyError(f"{path}: cannot read tokenizer JSON ({e})") from None
    if not isinstance(data, dict):
        raise VocabularyError(f"{path}: a tokenizer JSON must be an object")
    return data


def _token_text(value: Any) -> str | None:
    """The text of a token in a tokenizer config: a string, or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _from_tokenizer_data(
    data: dict[str, Any], *, eos_texts: Iterable[str | None], bos_text: str | None, name: str
) -> LoadedVocab:
    model = data.get("model") or {}
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        by_id = {int(i): piece for piece, i in vocab.items()}
    elif isinstance(vocab, list):  # Unigram: [piece, score] pairs, id = position
        by_id = {i: entry[0] for i, entry in enumerate(vocab)}
    else:
        raise VocabularyError(f"tokenizer {name!r}: model has no vocab")
    added = {int(t["id"]): t for t in data.get("added_tokens") or []}
    n = max([*by_id, *added], default=-1) + 1
    pieces = [by_id.get(i, "") for i in range(n)]

    types = _component_types(data.get("decoder")) or _component_types(data.get("pre_tokenizer"))
    family = _family(types, model.get("type"), name)
    byte_fallback = bool(model.get("byte_fallback")) or "ByteFallback" in types
    token_bytes = _decode(pieces, family, byte_fallback=byte_fallback)
    for i, t in added.items():
        token_bytes[i] = t["content"].encode("utf-8")
    texts = {i: t["content"] for i, t in added.items()}
    ids = {text: i for i, text in texts.items()}
    eos = end_of_generation_ids(texts) + [ids[t] for t in eos_texts if t in ids]
    return LoadedVocab(
        token_bytes=token_bytes,
        special_ids=sorted(i for i, t in added.items() if t.get("special")),
        eos_ids=eos,
        bos_id=ids.get(bos_text) if bos_text is not None else None,
        name=name,
    )


def _component_types(component: Any) -> set[str]:
    """Types of a decoder or pre-tokenizer, looking inside `Sequence`s; `Replace` of `▁` counts
    as `Metaspace`."""
    if not isinstance(component, dict):
        return set()
    kind = component.get("type")
    if kind == "Sequence":
        parts = component.get("decoders") or component.get("pretokenizers") or []
        return set().union(*map(_component_types, parts))
    if kind == "Replace" and (component.get("pattern") or {}).get("String") == _METASPACE:
        return {"Metaspace"}
    return {str(kind)}


def _family(types: set[str], model_type: Any, name: str) -> str:
    """'byte_level', 'metaspace' or 'plain' (pieces are their own UTF-8), from the types of the
    decoder (or of the pre-tokenizer when there is no decoder)."""
    if "ByteLevel" in types:
        return "byte_level"
    if "Metaspace" in types:
        return "metaspace"
    if model_type in ("WordPiece", "WordLevel") or "WordPiece" in types:
        raise VocabularyError(
            f"tokenizer {name!r}: {model_type} tokenizers do not map tokens to exact text "
            "(their decoder inserts spaces); not supported"
        )
    return "plain"


def _decode(pieces: list[str], family: str, *, byte_fallback: bool) -> list[bytes]:
    encoded = [p.encode("utf-8") for p in pieces]
    if family == "byte_level":
        return decode_byte_level(encoded)
    out = decode_metaspace(encoded) if family == "metaspace" else encoded
    if byte_fallback:
        for i, p in enumerate(pieces):
            if p.startswith("<0x") and (value := byte_fallback_value(p)) is not None:
                out[i] = bytes([value])
    return out


def _from_python_tokenizer(tokenizer: Any, name: str) -> LoadedVocab:
    """A transformers tokenizer without a `tokenizers` backend (a "slow" one)."""
    if hasattr(tokenizer, "byte_decoder"):
        family = "byte_level"
    elif hasattr(tokenizer, "sp_model"):
        family = "metaspace"
    else:
        raise VocabularyError(
            f"tokenizer {name!r} ({type(tokenizer).__name__}) is neither byte-level nor SentencePiece; "
            "load its tokenizer.json instead"
        )
    pieces = [p or "" for p in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))]
    token_bytes = _decode(pieces, family, byte_fallback=family == "metaspace")  # SentencePiece byte pieces
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    for i, t in added.items():
        token_bytes[i] = str(t).encode("utf-8")
    special = [i for i, t in added.items() if getattr(t, "special", False)]
    eos = end_of_generation_ids({i: str(t) for i, t in added.items()})
    return LoadedVocab(token_bytes, special, eos, None, name)


def _with_transformers_ids(loaded: LoadedVocab, tokenizer: Any) -> LoadedVocab:
    """Add what a transformers tokenizer knows beyond its backend: its special-token ids, EOS
    and BOS (a `tokenizers.Tokenizer` has none of these attributes)."""
    n = len(loaded.token_bytes)
    special = set(loaded.special_ids) | {i for i in getattr(tokenizer, "all_special_ids", []) if 0 <= i < n}
    eos = list(loaded.eos_ids)
    eos_id = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos_id, int) and 0 <= eos_id < n:
        eos.append(eos_id)
    bos_id = getattr(tokenizer, "bos_token_id", None)
    bos = bos_id if isinstance(bos_id, int) and 0 <= bos_id < n else loaded.bos_id
    return loaded._replace(special_ids=sorted(special), eos_ids=eos, bos_id=bos)
