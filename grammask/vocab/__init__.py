"""Vocabularies (token id -> bytes, special and EOS ids, logits width), their loaders, and the
token trie the engine walks."""

from grammask.vocab.trie import TokenTrie
from grammask.vocab.vocabulary import Vocabulary

__all__ = ["TokenTrie", "Vocabulary"]
