"""MaskBench: every valid instance of a compiled schema is accepted, no invalid one is.

A deterministic sample runs by default, in CI too (GRAMMASK_MASKBENCH_SAMPLE files, 80 unless set;
about 0.3 s a file); GRAMMASK_MASKBENCH_ALL=1 runs the whole folder. Schemas rejected at compile
time must fail with a GrammarError (a documented limitation), whether from the front-end or from an
automaton limit.
"""

from __future__ import annotations

import json
import os
import zlib
from collections import Counter
from pathlib import Path

import pytest

from grammask import Grammar
from grammask.engine.recognize import accepts
from grammask.errors import GrammarError

FOLDER = Path(__file__).resolve().parents[4] / "shared" / "maskbench-dev"
SAMPLE = int(os.environ.get("GRAMMASK_MASKBENCH_SAMPLE", "80"))


def _files() -> list[Path]:
    files = sorted(FOLDER.glob("*.json"))
    if os.environ.get("GRAMMASK_MASKBENCH_ALL") == "1":
        return files
    return sorted(files, key=lambda p: zlib.crc32(p.name.encode()))[:SAMPLE]


@pytest.mark.skipif(not FOLDER.is_dir(), reason="maskbench-dev is not on this machine")
def test_maskbench_instances_agree_with_labels():
    compiled, errors, wrong_rejects, wrong_accepts = 0, Counter(), [], []
    for path in _files():
        case = json.loads(path.read_text())
        try:
            grammar = Grammar.from_json_schema(case["schema"])
            verdicts = [accepts(grammar, json.dumps(test["data"]).encode()) for test in case["tests"]]
        except GrammarError as exc:
            errors[exc.reason.split(":")[0][:70]] += 1
            continue
        compiled += 1
        for test, ok in zip(case["tests"], verdicts, strict=True):
            if ok != test["valid"]:
                (wrong_rejects if test["valid"] else wrong_accepts).append(f"{path.name}: {test['description']}")
    print(
        f"\ncompiled {compiled}/{compiled + sum(errors.values())}; wrong rejects {len(wrong_rejects)}, "
        f"wrong accepts {len(wrong_accepts)}"
    )
    for reason, n in errors.most_common():
        print(f"{n:5d}  {reason}")
    assert not wrong_accepts, wrong_accepts[:20]
    assert not wrong_rejects, wrong_rejects[:20]
