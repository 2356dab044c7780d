"""``python -m msj_gym.agents.train`` says how far it is while it trains (a bar with rate and ETA on stderr),
and nothing of the kind with ``--no-progress``."""

from __future__ import annotations

import pathlib

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from msj_gym.agents import train

TINY = ["--n-envs", "2", "--n-steps", "32", "--episode-arrivals", "100", "--batch-size", "32"]


def test_training_draws_a_progress_bar(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--timesteps", "96", "--imitate", "msf", "--imitate-steps", "50", "--imitate-epochs", "1", *TINY]
    train.main([*args, "--out", str(tmp_path / "a.zip")])
    err = capsys.readouterr().err
    assert "collecting msf's decisions: 100%" in err and "50/50" in err
    # 96 steps asked; SB3 runs whole rollouts (128 here), the bar stops at what was asked
    assert "training: 100%" in err and "96/96" in err and "step/s" in err
    train.main([*args, "--no-progress", "--out", str(tmp_path / "b.zip")])
    err = capsys.readouterr().err
    assert "training" not in err and "collecting" not in err
