"""`python -m grammask.bench.server`: load test of `grammask serve` with concurrent clients.

Each configuration starts its own `grammask serve` subprocess (embedded SmolLM2, loopback port),
sends every schema once to warm the compile cache, then runs `--clients` threads for `--seconds`:
client `i` sends streamed chat requests with `response_format` json_schema (strict) number
`i % 16` (the 15 JSON Schemas of `grammask.bench.generation` and examples/person.json), greedy,
back to back. New requests stop at the deadline; those in flight finish. Reported per run: requests,
failures, % of outputs valid against their schema (`jsonschema`), p50/p99 latency, p50/p99 time to
first token, aggregate completion tokens/s, and the server's forward passes and draft acceptance.

Needs the `server` and `test` extras (FastAPI, uvicorn, openai, jsonschema).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grammask.bench.environment import describe

__all__ = ["main", "run_config", "schemas"]

MODEL = "SmolLM2-135M-Instruct"
PERSON = Path(__file__).resolve().parents[2] / "examples" / "person.json"


def schemas() -> list[tuple[str, str, dict]]:
    """(name, request, schema) for the 16 client schemas."""
    from grammask.bench.generation import formats

    out = [(f.name, f.request, f.schema) for f in formats() if f.schema is not None]
    if PERSON.exists():
        out.append(("examples/person", "Describe Alice, 30, as a person.", json.loads(PERSON.read_text())))
    return out


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class _Server:
    def __init__(self, args: list[str]) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = Path(tempfile.mkdtemp(prefix="grammask-bench-")) / "server.log"
        cmd = [sys.executable, "-m", "grammask.cli", "serve", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"grammask serve did not start:\n{self.log.read_text(errors='replace')[-3000:]}")
            try:
                self.health()
                return
            except OSError:
                time.sleep(0.5)

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=10) as r:
            return dict(json.loads(r.read()))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _request(client: Any, request: str, schema: dict, max_tokens: int) -> dict[str, Any]:
    """One streamed request: latency, time to first token, tokens, text."""
    start = time.monotonic()
    first = None
    text, tokens = "", 0
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": request}],
        temperature=0,
        max_tokens=max_tokens,
        stream=True,
        stream_options={"include_usage": True},
        response_format={"type": "json_schema", "json_schema": {"name": "out", "schema": schema, "strict": True}},
    )
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        for choice in chunk.choices:
            if choice.delta.content:
                first = first or time.monotonic()
                text += choice.delta.content
    end = time.monotonic()
    return {"latency": end - start, "ttft": (first or end) - start, "tokens": tokens, "text": text, "end": end}


def run_config(
    *, clients: int, seconds: float, jump_forward: bool, speculative_k: int, max_tokens: int, dtype: str
) -> dict[str, Any]:
    """One server configuration under `clients` concurrent clients for `seconds`."""
    import importlib

    import openai

    jsonschema: Any = importlib.import_module("jsonschema")  # the test extra; no type stubs needed

    table = schemas()
    concurrent = max(clients, len(table)) + 4
    args = ["--max-batch", str(max(clients, 1)), "--max-concurrent", str(concurrent), "--dtype", dtype]
    args += ["--speculative-k", str(speculative_k)] + ([] if jump_forward else ["--no-jump-forward"])
    server = _Server(args)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="-", max_retries=0, timeout=600)
        warm = [threading.Thread(target=_request, args=(client, r, s, max_tokens)) for _, r, s in table]
        for t in warm:  # warm-up: every grammar compiled once, all requests batched together
            t.start()
        for t in warm:
            t.join()
        before = server.health()["stats"]
        results: list[dict[str, Any]] = []
        failures: list[str] = []
        lock = threading.Lock()
        start = time.monotonic()
        deadline = start + seconds

        def worker(i: int) -> None:
            name, request, schema = table[i % len(table)]
            while time.monotonic() < deadline:
                try:
                    out = _request(client, request, schema, max_tokens)
                    try:
                        jsonschema.validate(json.loads(out["text"]), schema)
                        out["valid"] = True
                    except (ValueError, jsonschema.ValidationError):
                        out["valid"] = False
                    with lock:
                        results.append(out)
                except Exception as exc:  # a failed request is counted, never fatal
                    with lock:
                        failures.append(f"{name}: {exc}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = max([r["end"] for r in results], default=time.monotonic()) - start
        after = server.health()["stats"]
    finally:
        server.stop()
    tokens = sum(r["tokens"] for r in results)
    drafted = after["drafted_tokens"] - before["drafted_tokens"]
    return {
        "clients": clients,
        "jump_forward": jump_forward,
        "speculative_k": speculative_k,
        "requests": len(results),
        "failed": len(failures),
        "failures": failures[:5],
        "valid_percent": 100.0 * sum(r["valid"] for r in results) / max(len(results), 1),
        "latency_p50": _percentile([r["latency"] for r in results], 50),
        "latency_p99": _percentile([r["latency"] for r in results], 99),
        "ttft_p50": _percentile([r["ttft"] for r in results], 50),
        "ttft_p99": _percentile([r["ttft"] for r in results], 99),
        "tokens": tokens,
        "elapsed": elapsed,
        "tokens_per_s": tokens / elapsed if elapsed > 0 else 0.0,
        "forward_passes": after["forward_passes"] - before["forward_passes"],
        "forced_tokens": after["forced_tokens"] - before["forced_tokens"],
        "acceptance": (after["accepted_draft_tokens"] - before["accepted_draft_tokens"]) / drafted if drafted else None,
    }


def report(runs: list[dict[str, Any]], env: dict[str, str], command: str) -> str:
    """A markdown table of the runs, for docs/benchmarks.md."""
    lines = [
        f"`{command}`, {env['date']}, {env['machine']}, Python {env['python']}, grammask {env['grammask']}, "
        f"load average at the end {os.getloadavg()[0]:.1f}.",
        "",
        "| clients | jump-forward | speculative k | requests | failed | valid | latency p50 / p99 s | TTFT p50 / p99 s "
        "| tokens/s | passes per token | draft acceptance |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        accept = "" if r["acceptance"] is None else f"{100 * r['acceptance']:.0f}%"
        passes = r["forward_passes"] / r["tokens"] if r["tokens"] else float("nan")
        lines.append(
            f"| {r['clients']} | {'on' if r['jump_forward'] else 'off'} | {r['speculative_k']} | {r['requests']} "
            f"| {r['failed']} | {r['valid_percent']:.0f}% | {r['latency_p50']:.1f} / {r['latency_p99']:.1f} "
            f"| {r['ttft_p50']:.2f} / {r['ttft_p99']:.2f} | {r['tokens_per_s']:.1f} | {passes:.2f} | {accept} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grammask.bench.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=60, help="time each run sends requests (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=64, help="max_tokens per request (default: %(default)s)")
    parser.add_argument("--speculative-k", type=int, default=0, help="the server's --speculative-k (default: 0)")
    parser.add_argument("--no-jump-forward", action="store_true", help="run the server with --no-jump-forward")
    parser.add_argument("--dtype", default="float32", help="the server's --dtype (default: %(default)s)")
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="run 1 client and --clients clients, each with jump-forward on, off, and speculation (k=4) on",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the runs as JSON")
    args = parser.parse_args(argv)
    if args.matrix:
        configs = [(c, jf, k) for jf, k in ((True, 0), (False, 0), (True, 4)) for c in (1, args.clients)]
    else:
        configs = [(args.clients, not args.no_jump_forward, args.speculative_k)]
    runs = []
    for clients, jump_forward, k in configs:
        run = run_config(
            clients=clients,
            seconds=args.seconds,
            jump_forward=jump_forward,
            speculative_k=k,
            max_tokens=args.max_tokens,
            dtype=args.dtype,
        )
        print(json.dumps({k: v for k, v in run.items() if k != "failures"}), file=sys.stderr, flush=True)
        for failure in run["failures"]:
            print(f"  failed: {failure}", file=sys.stderr)
        runs.append(run)
    command = "python -m grammask.bench.server " + " ".join(argv if argv is not None else sys.argv[1:])
    print(report(runs, describe(), command))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=2))
    return 0 if all(r["failed"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
