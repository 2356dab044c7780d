"""Training recipes (agents/recipes): shipped ones are found by name from any folder, a recipe's
keys become the training command's defaults (the command line overrides them), every value is checked
as its flag's own, and a run writes its learning curve beside the checkpoint."""

from __future__ import annotations

import json
import math

import pytest

from msj_gym.agents import train
from msj_gym.agents.recipes import read_recipe, recipe_names


def test_the_shipped_recipes_are_listed_and_parse(capsys):
    names = recipe_names()
    assert {"ppo-sf-fig2-0.7", "ppo-classes"} <= set(names)
    for name in names:
        _, table = read_recipe(name)
        assert table.get("description")
        args = train.parse_args(["--recipe", name])  # every value passes its flag's checks
        assert args.recipe == name and str(args.out) == f"{name}.zip"
    assert train.main(["--list-recipes"]) is None
    listed = capsys.readouterr().out
    assert all(name in listed for name in names)


def test_a_recipe_sets_defaults_and_the_command_line_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # found by name from any folder
    args = train.parse_args(["--recipe", "ppo-sf-fig2-0.7"])
    _, table = read_recipe("ppo-sf-fig2-0.7")
    assert args.learning_rate == table["learning_rate"]
    assert args.average_reward is True and args.lyapunov_of == table["lyapunov_of"]
    over = train.parse_args(["--recipe", "ppo-sf-fig2-0.7", "--learning-rate", "0.01", "--seed", "2"])
    assert over.learning_rate == 0.01 and over.seed == 2
    assert over.gamma == table["gamma"]


def test_a_recipe_file_of_ones_own(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('description = "x"\nalgo = "ppo"\nnet_arch = [32, 16]\n')
    args = train.parse_args(["--recipe", str(path)])
    assert args.algo == "ppo" and args.net_arch == [32, 16] and args.out.name == "mine.zip"


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("learning_rte = 0.1\n", ["'learning_rte'", "not a flag"]),
        ('out = "x.zip"\n', ["'out'", "not a flag"]),
        ('algo = "a3c"\n', ["algo = 'a3c'", "expected one of"]),
        ('gamma = "high"\n', ["gamma = 'high'"]),
        ("average_reward = 1\n", ["average_reward = 1", "true or false"]),
        ("net_arch = 64\n", ["net_arch = 64", "list"]),
        ("seed = true\n", ["seed = True", "boolean"]),
        ("gamma = [\n", ["not TOML"]),
    ],
)
def test_bad_recipes_are_refused_in_one_line(tmp_path, text, needles):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        train.parse_args(["--recipe", str(path)])
    line = str(info.value)
    assert "\n" not in line
    for needle in needles:
        assert needle in line, (needle, line)


def test_an_unknown_recipe_names_the_shipped_ones():
    with pytest.raises(ValueError) as info:
        train.parse_args(["--recipe", "no-such-recipe"])
    assert "no-such-recipe" in str(info.value) and "ppo-sf-fig2-0.7" in str(info.value)


def test_a_run_writes_its_learning_curve_and_keeps_the_best_point(tmp_path):
    out = tmp_path / "agent.zip"
    train.main(
        [
            "--recipe", "ppo-sf-fig2-0.7", "--timesteps", "2048", "--n-envs", "4", "--n-steps", "256",
            "--batch-size", "256", "--imitate-steps", "300", "--imitate-epochs", "1", "--vf-warmup", "1024",
            "--episode-arrivals", "100", "--eval-every", "1024", "--eval-seeds", "5000-5001",
            "--eval-arrivals", "200", "--keep", "best", "--out", str(out), "--no-progress",
            "--save-every", "1024",
        ]
    )  # fmt: skip
    from msj_gym.agents.learning_curve import read_curve

    meta, points = read_curve(tmp_path / "agent-curve.jsonl")
    assert meta["recipe"] == "ppo-sf-fig2-0.7" and meta["eval_seeds"] == [5000, 5001]
    assert [p["steps"] for p in points] == [0, 1024, 2048]
    assert all(math.isinf(p["mean_response_time"]) or p["mean_response_time"] > 0 for p in points)
    saved = json.loads(out.with_suffix(".json").read_text())
    best = min(p["mean_response_time"] for p in points)
    assert saved["kept"]["curve_value"] == pytest.approx(best, rel=1e-5)
    assert saved["recipe"] == "ppo-sf-fig2-0.7" and saved["learning_curve"] == "agent-curve.jsonl"
    assert (tmp_path / "agent-last.zip").exists() and (tmp_path / "agent-last.json").exists()
    # the kept checkpoint is an agent the leaderboard loads, with the env keywords it trained with
    from msj_gym.experiments.agents import load_agent

    loaded = load_agent(str(out))
    assert loaded.env_kwargs["obs_jobs"] == 0 and loaded.env_kwargs["load"] == 0.7
    assert saved["complete"] is True and saved["train_wall_seconds"] > 0
    # so is every intermediate checkpoint, with its steps
    steps = sorted((tmp_path / "agent-steps").glob("*.zip"))
    assert [p.name for p in steps] == ["model_1024_steps.zip", "model_2048_steps.zip"]
    for path in steps:
        sidecar = json.loads(path.with_suffix(".json").read_text())
        assert sidecar["steps"] == int(path.stem.split("_")[1]) and sidecar["kept"] is None
        assert load_agent(str(path)).env_kwargs["load"] == 0.7


def test_a_run_stopped_early_has_written_its_best_point(tmp_path, monkeypatch):
    out = tmp_path / "agent.zip"

    def stopped(self, model):
        raise KeyboardInterrupt  # as a run killed at its time limit, after its last curve point

    monkeypatch.setattr(train.CurveCallback, "final", stopped)
    with pytest.raises(KeyboardInterrupt):
        train.main(
            [
                "--recipe", "ppo-sf-fig2-0.7", "--timesteps", "1024", "--n-envs", "4", "--n-steps", "256",
                "--batch-size", "256", "--imitate-steps", "300", "--imitate-epochs", "1",
                "--episode-arrivals", "100", "--eval-every", "1024", "--eval-seeds", "5000",
                "--eval-arrivals", "200", "--keep", "best", "--out", str(out), "--no-progress",
            ]
        )  # fmt: skip
    from msj_gym.agents.learning_curve import read_curve
    from msj_gym.experiments.agents import load_agent

    _, points = read_curve(tmp_path / "agent-curve.jsonl")
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["complete"] is False and saved["train_wall_seconds"] is None
    best = min(p["mean_response_time"] for p in points)
    assert saved["kept"]["curve_value"] == pytest.approx(best, rel=1e-5)
    assert load_agent(str(out)).env_kwargs["load"] == 0.7
