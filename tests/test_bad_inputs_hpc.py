"""The bad-input catalogue of the HPC / GPU-cluster track (bounded slowdown's tau, ranking metrics, SWF
logs as scenarios, the field's heuristics): each is refused by the CLI with exit code 2 and one line
naming the field or flag and the value, before any simulation, writing nothing."""

from __future__ import annotations

import pytest

from tests.test_bad_inputs import SIM, _empty, _refused

TAU_CASES = [
    (["--tau", "0"], ["--tau", "0.0"]),
    (["--tau", "-10"], ["--tau", "-10.0"]),
    (["--tau", "nan"], ["--tau", "nan"]),
    (["--tau", "inf"], ["--tau", "inf"]),
]


@pytest.mark.parametrize(("flags", "needles"), TAU_CASES, ids=[" ".join(c[0]) for c in TAU_CASES])
def test_bad_tau(flags, needles, capsys):
    _refused([*SIM, *flags], needles, capsys)


def test_tau_on_a_moldable_system_is_refused(capsys):
    _refused(
        ["simulate", "--scenario", "002-linear-mean-field", "--policy", "moldable-greedy", "--tau", "10"],
        ["--tau", "not used by moldable scenario", "10.0"],
        capsys,
    )


def test_bad_leaderboard_metric_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["leaderboard", "--policies", "fcfs", "--seeds", "1", "--out", str(out), "--metric", "p99"]
    _refused(argv, ["--metric", "'p99'", "response_time_p99"], capsys)
    assert _empty(out)
