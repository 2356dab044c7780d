"""The example search of docs/policy-search.md (``examples/policy_search.py``): random search over a
priority rule's weights, scored by ``msj_gym.score``, at a tiny budget (one candidate, one point, two
seeds, short runs, the disk cache in a temporary folder). It runs as a user runs it, a script in a
process of its own: its rule is compiled and cached as a script's."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import msj_gym

from .conftest import EXAMPLES, ROOT


def test_the_search_starts_at_first_fit_and_keeps_its_best(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    argv = ["--arrivals", "1000", "--points", "one-or-all@0.7", "--budget", "1"]
    argv += ["--search-seeds", "5600-5601", "--held-out-seeds", "5700-5701"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "policy_search.py"), *argv],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 + 1 + 3 and lines[2] == "held-out seeds 5700-5701:", lines
    start, candidate = (float(re.search(r": (-?[\d.]+)", line)[1]) for line in lines[:2])  # type: ignore[index]
    # the start is First-Fit, decision for decision: the same score on the same seeds
    first_fit = msj_gym.score("first-fit", seeds="5600-5601", arrivals=1000, points="one-or-all@0.7")
    assert lines[0] == f"start {{'need_weight': 0.0, 'block_below': 0.0}}: {first_fit.score:.2f}"
    kept = lines[1].endswith("  kept")
    assert kept == (candidate > start)  # the best so far is kept, and only it
    held_start, held_best = (float(re.search(r"\}: (-?[\d.]+)", line)[1]) for line in lines[3:])  # type: ignore[index]
    assert held_best == held_start or kept  # the best is the start unless the candidate beat it
