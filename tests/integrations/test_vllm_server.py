"""grammask in a real vLLM OpenAI server (`--structured-outputs-config.backend grammask`), driven with
the official `openai` client: every structured-output feature, tools, concurrency, errors,
speculative decoding, and the same greedy output as vLLM's xgrammar backend.

Run by scripts/test_vllm.sh in the vLLM environment; skipped where vLLM is not installed. The tests
run in file order and share servers: one server runs at a time, started on first use (about 80 s
each on two cores), and its log is printed when a start fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("vllm")
openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

MODEL = "smollm2"
START_TIMEOUT = 400
SPECULATIVE = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
SERVERS = {
    "grammask": ["--structured-outputs-config.backend", "grammask"],
    "grammask+ngram": ["--structured-outputs-config.backend", "grammask", "--speculative-config", SPECULATIVE],
    "xgrammar": ["--structured-outputs-config.backend", "xgrammar"],
}
#: Where the comparison with xgrammar is written (JSON), for docs/integrations.md.
REPORT = Path(os.environ.get("GRAMMASK_VLLM_REPORT", Path(tempfile.gettempdir()) / "grammask-vllm-report.json"))


class Server:
    """One vLLM OpenAI server on a free loopback port, logging to a file."""

    def __init__(self, name: str, model_dir: str) -> None:
        self.name = name
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log_path = Path(tempfile.mkdtemp(prefix="grammask-vllm-")) / f"{name}.log"
        cmd = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model_dir,
            "--served-model-name",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "float32",
            "--max-model-len",
            "1024",
            "--max-num-seqs",
            "8",
            "--enforce-eager",
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "hermes",
            "--seed",
            "0",
            *SERVERS[name],
        ]
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.log = open(self.log_path, "wb")
        # Started outside the checkout: a stale grammask.egg-info there would hide the plugin's entry point.
        self.process = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=self.log_path.parent, start_new_session=True
        )
        self.client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{self.port}/v1", api_key="none", timeout=300, max_retries=0
        )

    def wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.fail(f"exited with code {self.process.returncode} while starting")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(2)
        self.fail(f"did not answer /health within {START_TIMEOUT} s")

    def tail(self, lines: int = 80) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def fail(self, why: str) -> None:
        text = self.tail()
        self.stop()
        pytest.fail(f"vLLM server '{self.name}' {why}; last lines of {self.log_path}:\n{text}", pytrace=False)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


class Servers:
    """At most one server at a time; asking for another kind stops the running one."""

    def __init__(self, model_dir: str) -> None:
        self.model_dir = model_dir
        self.current: Server | None = None

    def get(self, name: str) -> openai.OpenAI:
        if self.current is None or self.current.name != name:
            self.close()
            self.current = Server(name, self.model_dir)
            self.current.wait()
        return self.current.client

    def metric(self, name: str) -> float:
        """The sum of a Prometheus counter of the running server (over its labels)."""
        assert self.current is not None
        with urllib.request.urlopen(f"http://127.0.0.1:{self.current.port}/metrics", timeout=10) as response:
            lines = response.read().decode().splitlines()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in lines
            if line.startswith(name + "{") or line.startswith(name + " ")
        )

    def check_alive(self) -> None:
        if self.current is not None and self.current.process.poll() is not None:
            self.current.fail("died")

    def close(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None


@pytest.fixture(scope="module")
def servers():
    model_dir = os.environ.get("GRAMMASK_VLLM_MODEL")
    if not model_dir:
        pytest.skip("GRAMMASK_VLLM_MODEL (a transformers model folder) is not set: run scripts/test_vllm.sh")
    pool = Servers(model_dir)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def client(servers):
    yield servers.get("grammask")
    servers.check_alive()


def chat(client, prompt: str, *, max_tokens: int = 64, **kwargs):
    return client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=max_tokens, **kwargs
    )


def text_of(response) -> str:
    choice = response.choices[0]
    assert choice.finish_reason == "stop", f"finished by {choice.finish_reason}: {choice.message.content!r}"
    return choice.message.content


PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 30}, "unit": {"type": "string", "enum": ["C", "F"]}},
            "required": ["city", "unit"],
        },
    },
}


def json_format(schema: dict, name: str = "answer") -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def structured(**spec) -> dict:
    return {"extra_body": {"structured_outputs": spec}}


# -- features ----------------------------------------------------------------------------------------


def test_json_schema(client):
    out = text_of(chat(client, "Give a person's name and age as JSON.", response_format=json_format(PERSON)))
    jsonschema.validate(json.loads(out), PERSON)


def test_regex_choice_gbnf_lark(client):
    out = text_of(chat(client, "What is a phone number?", **structured(regex=r"\d{3}-\d{4}")))
    assert re.fullmatch(r"\d{3}-\d{4}", out)
    out = text_of(chat(client, "Pick a colour.", **structured(choice=["red", "green", "blue"])))
    assert out in ("red", "green", "blue")
    gbnf = 'root ::= answer "."\nanswer ::= "yes" | "no"'
    out = text_of(chat(client, "Is the sky blue?", **structured(grammar=gbnf)))
    assert out in ("yes.", "no.")
    lark = 'start: "The answer is " NUMBER\nNUMBER: /[0-9]{1,3}/'
    out = text_of(chat(client, "What is 6 times 7?", **structured(grammar=lark)))
    assert re.fullmatch(r"The answer is [0-9]{1,3}", out)


def test_structural_tag(client):
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "tag",
            "begin": "<answer>",
            "content": {"type": "json_schema", "json_schema": PERSON},
            "end": "</answer>",
        },
    }
    out = text_of(chat(client, "Name a person and their age.", **structured(structural_tag=json.dumps(tag))))
    assert out.startswith("<answer>") and out.endswith("</answer>")
    jsonschema.validate(json.loads(out[len("<answer>") : -len("</answer>")]), PERSON)


@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}], ids=["required", "named"]
)
def test_tool_calls(client, tool_choice):
    response = chat(client, "What is the weather in Paris?", tools=[WEATHER], tool_choice=tool_choice, max_tokens=96)
    calls = response.choices[0].message.tool_calls
    assert calls, f"no tool call: {response.choices[0].message.content!r}"
    for call in calls:
        assert call.function.name == "get_weather"
        jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])


def test_six_concurrent_schemas(client):
    schemas = [
        PERSON,
        {"type": "object", "properties": {"colour": {"enum": ["red", "green", "blue"]}}, "required": ["colour"]},
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 2, "maxItems": 3},
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        {"type": "string", "pattern": "^[a-z]{3,8}$"},
        {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]},
    ]
    prompts = [
        "A person as JSON.",
        "Pick a colour as JSON.",
        "Some digits as a JSON array.",
        "Is water wet? Answer as JSON.",
        "A short lowercase word.",
        "A point as JSON.",
    ]
    with ThreadPoolExecutor(len(schemas)) as pool:
        asked = zip(prompts, schemas, strict=True)
        responses = list(pool.map(lambda a: chat(client, a[0], response_format=json_format(a[1])), asked))
    for schema, response in zip(schemas, responses, strict=True):
        jsonschema.validate(json.loads(text_of(response)), schema)


def test_invalid_formats_are_400_and_the_server_keeps_serving(client):
    bad = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}
    with pytest.raises(openai.BadRequestError):
        chat(client, "Hi", response_format=json_format(bad))
    with pytest.raises(openai.BadRequestError):
        chat(client, "Hi", **structured(grammar="root ::= ("))
    with pytest.raises(openai.BadRequestError, match="whitespace_pattern"):
        chat(client, "Hi", **structured(json={"type": "object"}, whitespace_pattern=" ?"))
    out = text_of(chat(client, "Pick one.", **structured(choice=["alpha", "beta"])))
    assert out in ("alpha", "beta")


# -- speculative decoding ------------------------------------------------------------------------------

SPEC_PROMPTS = [
    ('Copy this JSON exactly: {"name": "Ada Lovelace", "age": 36}', json_format(PERSON)),
    ('Repeat: {"name": "Alan Turing", "age": 41} and {"name": "Alan Turing", "age": 41}', json_format(PERSON)),
    ("Count: 1, 2, 3, 4, 5, 6, 7, 8, 9", None),
]


def _spec_outputs(client) -> list[str]:
    outputs = []
    for prompt, response_format in SPEC_PROMPTS:
        if response_format is None:
            response = chat(client, prompt, **structured(regex=r"(\d+, ){3,12}\d+"))
        else:
            response = chat(client, prompt, response_format=response_format)
        outputs.append(text_of(response))
    return outputs


def test_speculative_decoding_gives_the_same_output(servers):
    speculative = _spec_outputs(servers.get("grammask+ngram"))
    accepted = servers.metric("vllm:spec_decode_num_accepted_tokens_total")
    assert accepted > 0, "the n-gram speculator proposed no accepted token: the test would prove nothing"
    plain = _spec_outputs(servers.get("grammask"))
    assert speculative == plain


# -- side by side with xgrammar -----------------------------------------------------------------------

COMPARED = [
    ("json person", "Give a person's name and age as JSON.", {"response_format": json_format(PERSON)}),
    (
        "json nested",
        "Describe a book as JSON.",
        {
            "response_format": json_format(
                {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "maxLength": 40},
                        "year": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
                    },
                    "required": ["title", "year", "tags"],
                    "additionalProperties": False,
                }
            )
        },
    ),
    (
        "json enum",
        "Pick a colour as JSON.",
        {
            "response_format": json_format(
                {
                    "type": "object",
                    "properties": {"colour": {"enum": ["red", "green", "blue"]}},
                    "required": ["colour"],
                    "additionalProperties": False,
                }
            )
        },
    ),
    (
        "json array",
        "List three small numbers as a JSON array.",
        {
            "response_format": json_format(
                {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 0, "maximum": 99},
                    "minItems": 3,
                    "maxItems": 3,
                }
            )
        },
    ),
    ("regex phone", "What is a phone number?", structured(regex=r"\d{3}-\d{4}")),
    ("regex date", "When did the Berlin wall fall?", structured(regex=r"(19|20)\d\d-[01]\d-[0-3]\d")),
    ("regex words", "Describe the sea in a few words.", structured(regex=r"[A-Z][a-z]+( [a-z]+){2,6}\.")),
    ("choice", "Pick a colour.", structured(choice=["red", "green", "blue"])),
    ("gbnf", "Is the sky blue?", structured(grammar='root ::= answer "."\nanswer ::= "yes" | "no"')),
    (
        "gbnf list",
        "Name some fruits.",
        structured(grammar='root ::= item (", " item)*\nitem ::= "apple" | "banana" | "cherry" | "date"'),
    ),
    ("lark", "What is 6 times 7?", structured(grammar='start: "The answer is " NUMBER\nNUMBER: /[0-9]{1,3}/')),
    (
        "structural tag",
        "Name a person and their age.",
        structured(
            structural_tag=json.dumps(
                {
                    "type": "structural_tag",
                    "format": {
                        "type": "tag",
                        "begin": "<answer>",
                        "end": "</answer>",
                        "content": {"type": "json_schema", "json_schema": PERSON},
                    },
                }
            )
        ),
    ),
    ("tools required", "What is the weather in Paris?", {"tools": [WEATHER], "tool_choice": "required"}),
]


def _run_compared(client) -> tuple[dict[str, str], float, int]:
    """Outputs by format, and the seconds and tokens of all requests, run one after another."""
    outputs, seconds, tokens = {}, 0.0, 0
    for name, prompt, kwargs in COMPARED:
        start = time.perf_counter()
        response = chat(client, prompt, max_tokens=96, **kwargs)
        seconds += time.perf_counter() - start
        tokens += response.usage.completion_tokens
        message = response.choices[0].message
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
        outputs[name] = json.dumps([message.content, calls, response.choices[0].finish_reason])
    return outputs, seconds, tokens


def test_same_greedy_output_as_xgrammar(servers):
    """Each backend runs the formats twice: cold (the grammars are compiled on the way) and warm."""
    speed = {}
    runs = {}
    for backend in ("grammask", "xgrammar"):
        client = servers.get(backend)
        cold, cold_s, cold_n = _run_compared(client)
        warm, warm_s, warm_n = _run_compared(client)
        assert warm == cold, f"{backend}: a second greedy run differs from the first"
        runs[backend] = cold
        speed[backend] = {"cold": cold_n / cold_s, "warm": warm_n / warm_s, "tokens": cold_n}
    ours, theirs = runs["grammask"], runs["xgrammar"]
    report = {
        "formats": {
            name: {
                "grammask": json.loads(ours[name]),
                "xgrammar": json.loads(theirs[name]),
                "same": ours[name] == theirs[name],
            }
            for name, _, _ in COMPARED
        },
        "tokens_per_second": speed,
    }
    REPORT.write_text(json.dumps(report, indent=2))
    print(f"\ncomparison written to {REPORT}: tokens/s {json.dumps(speed)}")
    different = [name for name, row in report["formats"].items() if not row["same"]]
    for name in different:
        print(f"  {name}: grammask {ours[name]} | xgrammar {theirs[name]}")
    assert len(COMPARED) - len(different) >= 10, f"different greedy output for {different}"
