"""Nothing imports upward: the IR, the front-ends, the automata, the vocabulary, the engine and the
processors import only what lies below them (docs/design.md), checked on the source of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import grammask

ROOT = Path(grammask.__file__).parent
#: Package → the grammask modules and packages it may import (besides its own modules).
ALLOWED = {
    "ir": {"errors", "limits"},
    "frontends": {"errors", "limits", "ir"},
    "automata": {"errors", "limits", "lru", "jit", "collector", "ir"},
    "vocab": {"errors"},
    "engine": {"errors", "limits", "lru", "jit", "ir", "automata", "vocab"},
    "processors": {"errors", "bitmask", "compiler", "matcher"},
}


def _imports(path: Path) -> set[str]:
    """The first component after `grammask.` of every grammask import in a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):  # `from grammask import jit` imports grammask.jit
            names = [f"grammask.{a.name}" for a in node.names] if node.module == "grammask" else [node.module or ""]
        else:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found |= {name.split(".")[1] for name in names if name.startswith("grammask.")}
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_nothing_imports_upward(package):
    for path in sorted((ROOT / package).rglob("*.py")):
        upward = _imports(path) - ALLOWED[package] - {package}
        assert not upward, f"{path.relative_to(ROOT)} imports {sorted(upward)}"
