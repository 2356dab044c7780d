"""Golden results: every policy's seeded run must give exactly the numbers recorded in
``golden_results.json`` (floats bit for bit, written with ``float.hex``; no tolerance).

What it guards: the simulation results of every baseline policy natively (``Simulator``, with and
without ``debug=True``; ``PooledSimulator`` on a compatibility workload; the moldable loss simulator),
through ``MSJ-v0`` / ``MSJPreemptive-v0`` with ``PolicyAgent``, with random valid actions through the
single and the native vector envs (reward sums, observation hashes), ``MSJEnv.play_out``, and the
compatibility and moldable envs. A refactor of the compiled engine (e.g. how the event loop calls a
policy's compiled decision rule) must leave all of them unchanged. Cases where a policy is not defined on
a workload record the reason, so a change in what is supported also shows.

Regenerating: only when a change is MEANT to change results, run ``python -m tests.golden.make_golden``
from the repository root, review ``git diff tests/golden/golden_results.json`` and commit it with the
change that explains it. The case definitions live in ``cases.py``, shared with the generator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.golden.cases import all_cases

GOLDEN_FILE = Path(__file__).with_name("golden_results.json")
GOLDEN: dict[str, Any] = json.loads(GOLDEN_FILE.read_text())
CASES = all_cases()


def _differences(got: Any, want: Any, path: str = "", limit: int = 10) -> list[str]:
    """The first ``limit`` leaves where ``got`` and ``want`` differ, by path (hex floats decoded)."""
    out: list[str] = []
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got or key not in want:
                out.append(f"{path}/{key}: {'missing' if key not in got else 'unexpected'}")
            else:
                out += _differences(got[key], want[key], f"{path}/{key}", limit - len(out))
            if len(out) >= limit:
                break
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            out += _differences(g, w, f"{path}[{i}]", limit - len(out))
            if len(out) >= limit:
                break
    elif got != want or type(got) is not type(want):
        out.append(f"{path}: got {_show(got)}, golden {_show(want)}")
    return out[:limit]


def _show(x: Any) -> str:
    if isinstance(x, str):
        try:
            return f"{x} ({float.fromhex(x)!r})"
        except ValueError:
            pass
    return repr(x)[:200]


def test_the_golden_file_has_exactly_the_defined_cases() -> None:
    assert sorted(CASES) == sorted(GOLDEN), "cases changed: regenerate (see the module docstring)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_equals_golden(name: str) -> None:
    if name not in GOLDEN:
        pytest.fail(f"{name} is not in {GOLDEN_FILE.name}: regenerate (see the module docstring)")
    got = json.loads(json.dumps(CASES[name]()))  # through JSON, as stored: tuples become lists
    diff = _differences(got, GOLDEN[name])
    assert not diff, f"{name} differs from the golden file:\n" + "\n".join(diff)
