"""`grammask generate`: one-line errors with exit status 2 on bad input, valid output on good input."""

import json
from pathlib import Path

import pytest

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


@pytest.mark.model
def test_main_job_prints_valid_json(capsys):
    assert main(["generate", "My name is Alice and I am 30 years old.", "--json-schema", str(PERSON)]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "Alice", "age": 30}


@pytest.mark.model
def test_choice_and_forbidden_characters(capsys):
    assert main(["generate", "Is water wet?", "--choice", "yes", "no"]) == 0
    assert capsys.readouterr().out.strip() in ("yes", "no")
    assert main(["generate", "Write a poem about the sea.", "--forbid-chars", "e", "--max-tokens", "20"]) == 0
    out = capsys.readouterr().out
    assert out.strip() and "e" not in out
