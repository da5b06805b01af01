"""`grammask generate`: one-line errors with exit status 2 on bad input, valid output on good input."""

import importlib.metadata
import json
import time
from pathlib import Path

import pytest

from grammask import assets
from grammask.cli import main

PERSON = Path(__file__).parents[1] / "examples" / "person.json"


@pytest.mark.parametrize(
    "argv,reason",
    [
        (["generate", "hi", "--regex", "a(b"], "missing )"),
        (["generate", "hi", "--json-schema", "/nonexistent/schema.json"], "cannot read"),
        (["generate", "hi", "--grammar", "grammar.txt"], ".gbnf or .lark"),
        (["generate", "hi", "--pydantic", "nomodule"], "MODULE:CLASS"),
        (["generate", "hi", "--pydantic", "json:NoSuchClass"], "cannot load"),
        (["generate", "hi", "--max-tokens", "0"], "--max-tokens"),
        (["generate", "hi", "--regex", "a", "--choice", "x"], "not allowed with"),
        (["generate", "hi", "--model", "/nonexistent/model.gguf"], "no model at"),
        (["generate"], "required"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv, reason):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("grammask: error:") and reason in err, err


def test_bad_json_schema_file(tmp_path, capsys):
    bad = tmp_path / "schema.json"
    bad.write_text('{"type": "object",')
    assert main(["generate", "hi", "--json-schema", str(bad)]) == 2
    assert "is not JSON" in capsys.readouterr().err
    bad.write_text('{"type": "nonsense"}')
    assert main(["generate", "hi", "--json-schema", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_version_and_help_show_defaults(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"grammask {importlib.metadata.version('grammask')}"
    assert main(["generate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 256)" in text and "--seed S random seed" in text and "--lenient" in text


@pytest.mark.parametrize("prompt", ["", "  \n"])
def test_empty_prompt_is_bad_input(capsys, prompt):
    assert main(["generate", prompt, "--regex", "a"]) == 2
    assert "the prompt is empty" in capsys.readouterr().err


def test_empty_or_incomplete_model_folder_says_what_is_missing(tmp_path, capsys):
    assert main(["generate", "hi", "--model", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is empty" in err and "config.json" in err and "sentencepiece" not in err
    (tmp_path / "tokenizer.json").write_text("{}")
    assert main(["generate", "hi", "--model", str(tmp_path)]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_vocabulary_only_gguf_fails_at_once_and_writes_nothing(tmp_path, monkeypatch, capsys):
    vocab_only = assets.vocab_gguf_path("phi-3")
    monkeypatch.setenv("GRAMMASK_CACHE", str(tmp_path))
    start = time.monotonic()
    assert main(["generate", "hi", "--model", str(vocab_only)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no model weights" in err and "vocabulary-only" in err
    assert time.monotonic() - start < 10 and not any(tmp_path.iterdir())


SET_SCHEMA = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


def test_lenient_is_offered_and_prints_what_it_drops(tmp_path, capsys):
    schema = tmp_path / "set.json"
    schema.write_text(json.dumps(SET_SCHEMA))
    assert main(["generate", "hi", "--json-schema", str(schema)]) == 2
    err = capsys.readouterr().err
    assert "pass --lenient to drop it" in err and "lenient=True" not in err
    # With --lenient the keyword is dropped with a warning; the (missing) model is the next error.
    assert main(["generate", "hi", "--json-schema", str(schema), "--lenient", "--model", str(tmp_path / "no")]) == 2
    warning, error = capsys.readouterr().err.splitlines()
    assert warning.startswith("grammask: warning: dropped at /uniqueItems: uniqueItems over items")
    assert error.startswith("grammask: error: no model at")
    assert main(["generate", "hi", "--regex", "a", "--lenient"]) == 2
    assert "--lenient applies only to" in capsys.readouterr().err


@pytest.mark.model
@pytest.mark.parametrize(
    "argv,reason",
    [
        (["--json-schema", str(PERSON), "--max-tokens", "5"], "needs at least"),
        (["--choice", "yes", "no", "--forbid-chars", "yn"], "--forbid-chars"),
    ],
    ids=["budget", "forbid-chars"],
)
def test_input_the_tokenizer_rejects_is_status_2(capsys, argv, reason):
    assert main(["generate", "hi", *argv]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("grammask: error:") and reason in err
    assert "loading model" not in err  # rejected before the weights load


@pytest.mark.model
def test_a_format_closed_by_the_budget_is_reported(capsys):
    argv = ["generate", "My name is Alice and I am 30 years old.", "--json-schema", str(PERSON)]
    assert main([*argv, "--max-tokens", "12"]) == 0
    out, err = capsys.readouterr()
    assert set(json.loads(out)) == {"name", "age"}
    assert "finish reason length" in err and "more tokens" in err and "--max-tokens 12" in err


@pytest.mark.model
def test_choice_and_forbidden_characters(capsys):
    assert main(["generate", "Is water wet?", "--choice", "yes", "no"]) == 0
    assert capsys.readouterr().out.strip() in ("yes", "no")
    assert main(["generate", "Write a poem about the sea.", "--forbid-chars", "e", "--max-tokens", "20"]) == 0
    out = capsys.readouterr().out
    assert out.strip() and "e" not in out


def test_unusable_device_is_bad_input(capsys):
    torch = pytest.importorskip("torch")
    assert main(["generate", "hi", "--regex", "a", "--device", "nonsense"]) == 2
    assert "--device nonsense" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["generate", "hi", "--regex", "a", "--device", "cuda"]) == 2
        assert "sees no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,reason",
    [
        (["serve", "--max-batch", "0"], "--max-batch"),
        (["serve", "--speculative-k", "-1"], "--speculative-k"),
        (["serve", "--port", "70000"], "--port"),
        (["serve", "--model", "/nonexistent/model.gguf"], "no model at"),
        (["serve", "--dtype", "int3"], "invalid choice"),
    ],
)
def test_serve_bad_input_is_one_line_and_status_2(capsys, argv, reason):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("grammask: error:") and reason in err, err


def test_serve_help_lists_the_options(capsys):
    assert main(["serve", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in ("--api-key KEY", "--speculative-k N", "--max-concurrent N", "--host HOST", "--no-jump-forward"):
        assert option in text
