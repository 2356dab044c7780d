"""The example search of docs/policy-search.md (``examples/policy_search.py``): random search over a
priority rule's weights, scored by ``msj_gym.score``, at a tiny budget (one point, two seeds, short
runs, the disk cache in a temporary folder)."""

from __future__ import annotations

import math

import pytest

import msj_gym

from .conftest import example

SUITE = ["--arrivals", "1000", "--points", "one-or-all@0.7"]


def test_the_search_starts_at_first_fit_and_keeps_its_best(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    policy_search = example("policy_search")
    argv = [*SUITE, "--budget", "1", "--search-seeds", "5600-5601", "--held-out-seeds", "5700-5701"]
    out = policy_search.main(argv)
    start_search, best_search = out["search"]
    start_held, best_held = out["held_out"]
    # the start is First-Fit, decision for decision: the same score on the same seeds
    first_fit = msj_gym.score("first-fit", seeds="5600-5601", arrivals=1000, points="one-or-all@0.7")
    assert start_search == pytest.approx(first_fit.score, rel=1e-12)
    assert out["start"] == {"need_weight": 0.0, "block_below": 0.0}
    assert best_search >= start_search and all(math.isfinite(x) for x in (start_held, best_held))
    printed = capsys.readouterr().out
    assert "held-out seeds 5700-5701:" in printed and printed.count("\n") == 1 + 1 + 3
