"""README.md works as written: every Python block runs (those marked `readme-test: model` need the
embedded model), its first set-up command prints valid JSON, and `.ci/run` runs its test command."""

import json
import re
import shlex
from pathlib import Path

import pytest

from grammask.cli import main

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"<!-- readme-test(?P<model>: model)? -->\n```python\n(?P<code>.*?)```", re.S)
COMMANDS = re.findall(r"```\n(python -m pip install .*?)\n```", README)


def _blocks() -> list:
    params = []
    for n, match in enumerate(BLOCK.finditer(README), 1):
        marks = [pytest.mark.model] if match["model"] else []
        params.append(pytest.param(match["code"], marks=marks, id=f"block{n}"))
    return params


def test_every_python_block_is_tested():
    assert len(_blocks()) == README.count("```python") >= 3


@pytest.mark.parametrize("code", _blocks())
def test_python_block_runs_as_written(code, capsys):
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip()


def test_two_set_up_commands_and_ci_runs_the_test_command():
    assert len(COMMANDS) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install, test = COMMANDS[1].split(" && ")
    assert install in ci and re.search(rf"^{re.escape(test)}$", ci, re.M)


def test_readme_mentions_what_a_newcomer_needs():
    for needed in (
        "GRAMMASK_CACHE",
        "~/.cache/grammask",
        "torch==2.13.0",
        "--device cuda",
        "maskbench-dev",
        "Python 3.10",
    ):
        assert needed in README, needed


@pytest.mark.model
def test_first_command_prints_valid_json(capsys, monkeypatch):
    install, command = COMMANDS[0].split(" && ")
    argv = shlex.split(command)
    assert install == 'python -m pip install -e ".[model]"' and argv[0] == "grammask"
    monkeypatch.chdir(ROOT)
    assert main(argv[1:]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "Alice", "age": 30}
