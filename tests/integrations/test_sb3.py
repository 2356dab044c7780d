"""stable-baselines3: MaskablePPO on ``"msj_gym:MSJ-v0"`` with SB3's progress bar
(``examples/sb3_maskable_ppo.py``, shown in docs/integrations.md), at a tiny budget."""

from __future__ import annotations

import math

import pytest

from .conftest import example

pytest.importorskip("sb3_contrib", reason="sb3-contrib is not installed: pip install -e '.[rl]'")
pytest.importorskip("rich", reason="SB3's progress_bar=True needs rich: pip install rich")


def test_maskable_ppo_with_the_progress_bar(capfd) -> None:
    sb3_maskable_ppo = example("sb3_maskable_ppo")
    out = sb3_maskable_ppo.main(total_timesteps=512, num_envs=2, seeds=range(1))
    printed = capfd.readouterr()
    assert "512/512" in printed.out + printed.err  # SB3's rich progress bar, run to the end
    assert math.isfinite(out["msf"]) and out["msf"] > 0
    assert "learned" in out  # a model this young may only wait: its value is not asserted here
