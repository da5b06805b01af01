"""Regex syntax, GBNF, Lark, choice, token-automaton and JSON Schema front-ends: each makes a Grammar."""
