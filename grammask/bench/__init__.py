"""`python -m grammask.bench`: grammask beside llguidance and XGrammar, on the same data and vocabulary.

Modules, in the order a run uses them: `tokenize` (the Llama 3 tokenizer for test texts),
`engines` (one adapter per engine), `workers` (each engine in its own process, with time limits),
`walk` (the timed decoding steps), `samples` + `grammars` and `maskbench` (the two modes),
`stats` and `environment` (the report), `cli` (the command).
"""

from grammask.bench.cli import main

__all__ = ["main"]
