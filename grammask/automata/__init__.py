"""Regex syntax trees → trim, near-minimal byte-level DFAs over UTF-8 (with state limits)."""

from grammask.automata.compile import compile_regex
from grammask.automata.dfa import DEAD, START, ByteDFA
from grammask.automata.utf8 import utf8_sequences

__all__ = ["DEAD", "START", "ByteDFA", "compile_regex", "utf8_sequences"]
