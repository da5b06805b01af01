"""The JSON-Schema-Test-Suite (draft 2020-12) run through grammask: per file, the groups compiled
and the instances the grammar gets wrong.

A group is one schema with its test instances. Groups that jsonschema itself cannot validate
without fetching remote documents are left out. A schema refused as unsatisfiable counts as
compiled, with a grammar that accepts nothing (the refusal is the right answer for it). A compiled
group's instances are written with `json.dumps(..., ensure_ascii=False)` and checked with the
grammar; the suite's `valid` flag is the truth. `format.json` checks that `format` is only an
annotation (draft 2020-12's default), so it runs with `formats="annotate"`; `optional/format`
checks formats asserted, grammask's default.
`python -m tests.jsts.suite` prints the figures and, with `--update`, rewrites the committed
baseline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema

from grammask import Grammar, GrammarError, Limits
from grammask.assets import json_schema_test_suite_dir
from grammask.engine.recognize import accepts

BASELINE = Path(__file__).with_name("baseline.json")
#: Seconds one group's schema may take to compile before it counts as not compiled.
GROUP_TIMEOUT_S = 20.0
_FIELDS = ("groups", "compiled", "false_accepts", "false_rejects")


def suite_files() -> list[tuple[str, Path]]:
    """(name, path): the required draft 2020-12 files, then `optional/format/*`."""
    root = json_schema_test_suite_dir() / "draft2020-12"
    required = sorted(root.glob("*.json"))
    formats = sorted((root / "optional" / "format").glob("*.json"))
    return [(p.name, p) for p in required] + [(f"optional/format/{p.name}", p) for p in formats]


def _needs_remote(group: dict) -> bool:
    """Whether jsonschema (with its bundled metaschemas only) fails to evaluate the group."""
    try:
        validator = jsonschema.Draft202012Validator(group["schema"])
        for test in group["tests"]:
            validator.is_valid(test["data"])
    except jsonschema.exceptions._WrappedReferencingError:
        return True
    return False


def run_file(path: Path, formats: str = "assert") -> dict[str, int]:
    """The figures of one suite file."""
    out = dict.fromkeys(_FIELDS, 0)
    limits = Limits(compile_timeout_s=GROUP_TIMEOUT_S)
    for group in json.loads(path.read_text(encoding="utf-8")):
        if _needs_remote(group):
            continue
        out["groups"] += 1
        try:
            grammar = Grammar.from_json_schema(group["schema"], formats=formats, limits=limits)
        except GrammarError as exc:
            if not exc.reason.startswith("the schema is unsatisfiable"):
                continue
            grammar = None  # refusing an unsatisfiable schema is right: it rejects every instance
        out["compiled"] += 1
        for test in group["tests"]:
            got = grammar is not None and accepts(grammar, json.dumps(test["data"], ensure_ascii=False).encode())
            if got and not test["valid"]:
                out["false_accepts"] += 1
            elif test["valid"] and not got:
                out["false_rejects"] += 1
    return out


def run_suite() -> dict[str, dict[str, int]]:
    return {name: run_file(path, "annotate" if name == "format.json" else "assert") for name, path in suite_files()}


def totals(figures: dict[str, dict[str, int]], prefix: str | None = None, exclude: str | None = None) -> dict[str, int]:
    """Sums over the files whose name starts with `prefix` (and not with `exclude`)."""
    names = [
        n
        for n in figures
        if (prefix is None or n.startswith(prefix)) and (exclude is None or not n.startswith(exclude))
    ]
    return {f: sum(figures[n][f] for n in names) for f in _FIELDS}


def main(argv: list[str]) -> None:
    figures = run_suite()
    for name, row in figures.items():
        print(f"{name:45} " + " ".join(f"{f}={row[f]}" for f in _FIELDS))
    print("required:       ", totals(figures, exclude="optional/"))
    print("optional/format:", totals(figures, prefix="optional/format/"))
    print("all:            ", totals(figures))
    if "--update" in argv:
        BASELINE.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {BASELINE}")


if __name__ == "__main__":
    main(sys.argv[1:])
