"""Command line of `python -m grammask.bench {grammars,jsonschema,batch}`.

Both modes run grammask, llguidance and XGrammar in one process tree on the same data and the
same Llama 3 vocabulary, one thread each, and print Markdown tables (ready for
`docs/benchmarks.md`). A peer that is not installed is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from grammask import assets
from grammask.bench.engines import ENGINES, THREAD_ENV, engine_available
from grammask.bench.environment import describe
from grammask.bench.stats import format_table
from grammask.bench.workers import EngineWorker

__all__ = ["main"]

_DEFAULT_MASKBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "maskbench-dev"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grammask.bench", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated subset of {','.join(ENGINES)}")
    common.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="seconds per engine and grammar (default 60)"
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    g = sub.add_parser("grammars", parents=[common], help="regexes and llama.cpp GBNF grammars")
    g.add_argument("--only", nargs="*", default=[], metavar="NAME", help="run only these formats (by name)")
    j = sub.add_parser("jsonschema", parents=[common], help="MaskBench JSON Schema files")
    j.add_argument("folder", nargs="?", type=Path, default=_DEFAULT_MASKBENCH, help="folder of MaskBench files")
    j.add_argument("--limit", type=int, metavar="N", help="at most N files (after --filter)")
    j.add_argument("--filter", default="", metavar="PREFIX", help="only files named PREFIX*")
    j.add_argument("--stride", type=int, default=1, metavar="K", help="every K-th file (a sample per category)")
    j.add_argument("--json-out", type=Path, metavar="FILE", help="write per-schema results as JSON here")
    b = sub.add_parser("batch", parents=[common], help="one bitmask for a batch of rows with different schemas")
    b.add_argument("folder", nargs="?", type=Path, default=_DEFAULT_MASKBENCH, help="folder of MaskBench files")
    b.add_argument("--sizes", default="1,8,64", help="batch sizes, comma-separated (default 1,8,64)")
    b.add_argument("--passes", type=int, default=3, help="passes over each row's tokens (default 3)")
    b.add_argument("--stride", type=int, default=37, metavar="K", help="rows from every K-th file (default 37)")
    return parser


def _start_workers(names: Sequence[str], gguf: Path, stack: ExitStack) -> list[EngineWorker]:
    """One started worker per available engine; the others are reported and skipped."""
    workers = []
    for name in names:
        if not engine_available(name):
            print(f"skipping {name}: not installed (pip install {name})", file=sys.stderr)
            continue
        worker = stack.enter_context(EngineWorker(name, gguf))
        reason = worker.start()
        if reason is not None:
            print(f"skipping {name}: {reason}", file=sys.stderr)
            continue
        workers.append(worker)
    return workers


def _header(workers: Sequence[EngineWorker]) -> str:
    env = describe()
    lines = [f"- {k}: {v}" for k, v in env.items()]
    rows = [[w.engine_name, w.version, *(w.load_s or (None, None)), w.restarts, w.peak_rss_mb()] for w in workers]
    header = ["engine", "version", "vocabulary load s", "engine + tokenizer load s", "worker restarts", "peak RSS MiB"]
    table = format_table(header, rows)
    return "\n".join(lines) + "\n\n" + table


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.update(THREAD_ENV)
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        print(f"unknown engine(s) {', '.join(unknown)}; expected {', '.join(ENGINES)}", file=sys.stderr)
        return 2
    gguf = assets.vocab_gguf_path("llama-bpe")

    import grammask
    from grammask.bench.tokenize import Llama3Tokenizer

    tokenizer = Llama3Tokenizer(gguf)
    with ExitStack() as stack:
        workers = _start_workers(names, gguf, stack)
        if not workers:
            print("no engine could run", file=sys.stderr)
            return 1
        engines = [w.engine_name for w in workers]
        if args.mode == "grammars":
            from grammask.bench.grammars import report_grammars, run_grammars

            token_bytes = grammask.Vocabulary.from_gguf(gguf).token_bytes
            cases = run_grammars(workers, tokenizer.encode, timeout=args.timeout, only=args.only)
            body = report_grammars(cases, engines, token_bytes)
        elif args.mode == "batch":
            from grammask.bench.batch import report_batch, run_batch
            from grammask.bench.maskbench import list_files

            sizes = [int(n) for n in args.sizes.split(",")]
            files = list_files(args.folder, stride=args.stride)
            if not files:
                print(f"no MaskBench files in {args.folder}", file=sys.stderr)
                return 1
            batches = run_batch(
                workers, files, tokenizer.encode, sizes=sizes, passes=args.passes, timeout=args.timeout * max(sizes)
            )
            body = report_batch(batches, engines)
        else:
            from grammask.bench.maskbench import list_files, report_maskbench, run_maskbench

            files = list_files(args.folder, prefix=args.filter, stride=args.stride, limit=args.limit)
            if not files:
                print(f"no MaskBench files in {args.folder} (filter {args.filter!r})", file=sys.stderr)
                return 1
            started = time.perf_counter()

            def progress(done: int, total: int) -> None:
                if done % 100 == 0 or done == total:
                    print(f"{done}/{total} files, {time.perf_counter() - started:.0f} s", file=sys.stderr)

            results = run_maskbench(files, workers, tokenizer.encode, timeout=args.timeout, progress=progress)
            body = report_maskbench(results, engines)
            if args.json_out is not None:
                payload = {"environment": describe(), "results": [r.to_json() for r in results]}
                args.json_out.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        print(_header(workers) + "\n\n" + body)
    return 0
