"""Smoke tests of the learned-agent scripts at a tiny budget, and the shipped checkpoint."""

from __future__ import annotations

import json
import pathlib

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from msj_gym.agents import evaluate, train

CHECKPOINTS = pathlib.Path(__file__).resolve().parents[2] / "agents" / "checkpoints"
OBLIVIOUS = ("first-fit", "msf", "adaptive-quickswap", "static-quickswap")  # non-preemptive, size-oblivious
SIZE_AWARE = (*OBLIVIOUS, "easy-backfilling")


# An unmasked agent's evaluation is most of this test's time: at a tiny budget it takes masked actions
# (each a wait), and its episodes run to the arrival cap of a heuristic's run, 2 x 200 + 32768 arrivals.
# The masked algorithm runs in the default run; every algorithm trains there (the test after this one).
EVALUATED = [a if a == "maskable-ppo" else pytest.param(a, marks=pytest.mark.slow) for a in train.ALGOS]


@pytest.mark.parametrize("algo", [a for a in train.ALGOS if a != "maskable-ppo"])
def test_train_smoke(algo: str, tmp_path: pathlib.Path) -> None:
    """Every algorithm trains at a tiny budget and writes its checkpoint and metadata (its evaluation:
    the slow twin of the test below)."""
    out = tmp_path / f"{algo}.zip"
    argv = ["--algo", algo, "--timesteps", "128", "--n-envs", "2", "--n-steps", "64"]
    train.main([*argv, "--episode-arrivals", "100", "--no-progress", "--out", str(out)])
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["algo"] == algo and meta["env_kwargs"]["scenario"] == "sf-fig2" and out.exists()


@pytest.mark.parametrize("algo", EVALUATED)
def test_train_then_evaluate_smoke(algo: str, tmp_path: pathlib.Path) -> None:
    out = tmp_path / f"{algo}.zip"
    train.main(
        [
            "--algo",
            algo,
            "--timesteps",
            "256",
            "--n-envs",
            "2",
            "--n-steps",
            "64",
            "--episode-arrivals",
            "100",
            "--out",
            str(out),
        ]
    )
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["algo"] == algo and meta["env_kwargs"]["scenario"] == "sf-fig2"
    results = tmp_path / "eval.jsonl"
    table = evaluate.main([str(out), "--seeds", "5", "--arrivals", "200", "--out", str(results)])
    assert {t["policy"] for t in table} >= {f"agent:{algo}", "fcfs", "msf", "first-fit"}
    assert [t["rank"] for t in table] == list(range(1, len(table) + 1))
    lines = results.read_text().splitlines()
    # resumable: a rerun finds every point done and appends nothing
    evaluate.main([str(out), "--seeds", "5", "--arrivals", "200", "--out", str(results)])
    assert results.read_text().splitlines() == lines
    # never reused once the checkpoint changed: its bytes are in every row's stamp
    assert {json.loads(line)["stamp"] for line in lines} == {evaluate.run_stamp(out)}
    out.write_bytes(out.read_bytes() + b"\0")
    with pytest.raises(ValueError, match="holds runs made from another checkpoint or code"):
        evaluate.main([str(out), "--seeds", "5", "--arrivals", "200", "--out", str(results)])


def test_imitation_then_rl_smoke(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "bc.zip"
    train.main(
        [
            "--imitate",
            "msf",
            "--imitate-steps",
            "600",
            "--imitate-epochs",
            "20",
            "--timesteps",
            "64",
            "--n-envs",
            "1",
            "--n-steps",
            "64",
            "--episode-arrivals",
            "100",
            "--out",
            str(out),
        ]
    )
    meta = json.loads(out.with_suffix(".json").read_text())
    # MSF is a deterministic function of what the observation shows: cloning it must mostly succeed
    assert meta["imitated"] == "msf" and meta["imitation_accuracy"] > 0.8


def test_evaluate_rejects_bad_input(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="seeds"):
        evaluate.parse_seeds("a-b")
    with pytest.raises(ValueError, match="no such file"):
        evaluate.main([str(tmp_path / "missing.zip")])
    # an agent of another model: one line naming its env, before any run
    with pytest.raises(ValueError, match="an agent of MSJMoldable-v0; this script evaluates MSJ-v0"):
        evaluate.main(["ppo-moldable-hw", "--out", str(tmp_path / "m.jsonl")])
    assert not (tmp_path / "m.jsonl").exists()


def test_shipped_checkpoint_beats_fcfs_on_a_held_out_seed() -> None:
    ckpt = CHECKPOINTS / "maskable-ppo-sf-fig2-0.7.zip"
    meta = json.loads(ckpt.with_suffix(".json").read_text())
    env = gym.make(meta["env_id"], **meta["env_kwargs"])
    assert env.unwrapped.workload.name == "sf-fig2" and env.unwrapped.workload.load == 0.7
    table = evaluate.main([str(ckpt), "--seeds", "2024", "--arrivals", "3000"])
    by = {t["policy"]: t for t in table}
    assert by["agent:maskable-ppo-sf-fig2-0.7"]["mean_response_time"] < by["fcfs"]["mean_response_time"]


def test_shipped_agents_load_by_name_from_any_directory(tmp_path, monkeypatch) -> None:
    from msj_gym.experiments.agents import load_agent, shipped_agents

    monkeypatch.chdir(tmp_path)  # not the checkout: the name resolves to the installed checkpoint
    names = shipped_agents()
    assert "maskable-ppo-sf-fig2-0.7" in names
    spec = load_agent("maskable-ppo-sf-fig2-0.7")
    assert spec.env_id == "MSJ-v0" and spec.env_kwargs["scenario"] == "sf-fig2"
    with pytest.raises(ValueError, match="not a shipped agent"):
        load_agent("no-such-agent")


def test_rollout_improvement_smoke(tmp_path: pathlib.Path) -> None:
    from msj_gym.agents import improve

    out = tmp_path / "rollout.zip"
    data = tmp_path / "data"
    argv = ["--decisions", "60", "--rounds", "2", "--epochs", "2", "--episode-arrivals", "300"]
    argv += ["--candidates", "2", "--select-seeds", "1", "--select-arrivals", "200"]
    argv += ["--skip", "20", "--tail", "100", "--data", str(data), "--out", str(out)]
    improve.main(argv)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["method"] == "rollout-improvement" and meta["decisions"] == 120
    assert meta["selection_mean_response_time"] > 0
    part = np.load(data / "round-1.npz")
    cost, mask = part["cost"], part["mask"]
    # every valid action was compared (finite cost, minus the time jobs spend in the system), none other
    assert np.array_equal(~np.isnan(cost), mask) and (cost[mask] > 0).all()
    # a rerun with the same settings reuses both rounds; other settings redo them
    before = (data / "round-2.npz").stat().st_mtime_ns
    improve.main(argv)
    assert (data / "round-2.npz").stat().st_mtime_ns == before
    # a third round reuses the first two (a round's decisions do not depend on how many follow)
    improve.main([*argv[:3], "3", *argv[4:]])
    assert (data / "round-2.npz").stat().st_mtime_ns == before and (data / "round-3.npz").exists()
    assert json.loads(out.with_suffix(".json").read_text())["decisions"] == 180
    improve.main([*argv[:-2], "--explore", "0.2", "--out", str(out)])
    assert (data / "round-2.npz").stat().st_mtime_ns != before
    # a round file cut short (a killed writer) is collected again, with a note, not a traceback
    whole = (data / "round-1.npz").read_bytes()
    (data / "round-1.npz").write_bytes(whole[: len(whole) // 2])
    improve.main([*argv[:-2], "--explore", "0.2", "--out", str(out)])
    assert (data / "round-1.npz").read_bytes() == whole
    table = evaluate.main([str(out), "--seeds", "5", "--arrivals", "200"])
    assert {t["policy"] for t in table} >= {"agent:rollout", "msf"}


def test_rollout_improvement_with_priority_actions_smoke(tmp_path: pathlib.Path) -> None:
    """Preemptive, priority actions: the base drives the episodes (step_policy) and its own decision
    is compared as one more branch; the evaluation meets the preemptive baselines."""
    from msj_gym.agents import improve

    out = tmp_path / "priority.zip"
    data = tmp_path / "data"
    argv = ["--env-id", "MSJPreemptive-v0", "--actions", "priority", "--base", "server-filling"]
    argv += ["--decisions", "60", "--rounds", "1", "--epochs", "2", "--episode-arrivals", "300"]
    argv += ["--candidates", "1", "--select-seeds", "1", "--select-arrivals", "200"]
    argv += ["--skip", "20", "--tail", "100", "--data", str(data), "--out", str(out)]
    improve.main(argv)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["env_kwargs"]["actions"] == "priority" and meta["decisions"] == 60
    part = np.load(data / "round-1.npz")
    cost, mask, base_cost = part["cost"], part["mask"], part["base_cost"]
    assert np.array_equal(~np.isnan(cost), mask) and (cost[mask] > 0).all()
    assert (part["base"] == -1).all() and np.isfinite(base_cost).all() and (base_cost > 0).all()
    with pytest.raises(ValueError, match="--imitate-epochs"):
        improve.main([*argv, "--no-grid", "--imitate-epochs", "1"])
    table = evaluate.main([str(out), "--seeds", "5", "--arrivals", "200"])
    assert {t["policy"] for t in table} >= {"agent:priority", "server-filling", "msf"}


def test_shipped_rollout_agent_beats_every_heuristic_on_a_held_out_seed() -> None:
    # its 20-seed evaluation is in agents/checkpoints/README.md; here one seed it never saw
    table = evaluate.main(["rollout-sf-fig2-0.7", "--seeds", "2024", "--arrivals", "5000"])
    by = {t["policy"]: t["mean_response_time"] for t in table}
    agent = by.pop("agent:rollout-sf-fig2-0.7")
    optimum = by.pop("mdp-optimal")
    assert optimum < agent < min(by.values())


def test_shipped_preemptive_agent_beats_server_filling_on_a_held_out_seed() -> None:
    # its 20-seed evaluation is in agents/checkpoints/README.md; here one seed it never saw, against
    # the policy it was learned from (size-oblivious, as the agent is)
    from msj_gym import Simulator, rollout
    from msj_gym.baselines import make_policy
    from msj_gym.experiments.agents import load_agent

    loaded = load_agent("rollout-preemptive-sf-fig2-0.7")
    assert loaded.env_id == "MSJPreemptive-v0" and loaded.env_kwargs["actions"] == "priority"
    env = loaded.make_env("sf-fig2", {"load": 0.7}, num_arrivals=5000, warmup=500)
    agent = rollout(env, loaded.model, seed=2024).mean_response_time
    workload = env.unwrapped.workload
    base = Simulator(workload, make_policy("server-filling"), seed=2024, num_arrivals=5000, warmup=500).run()
    assert agent < base.mean_response_time - 0.2


def test_rollout_improvement_from_a_rule_outside_the_registry_smoke(tmp_path: pathlib.Path) -> None:
    """``--base module:attr``: a size-aware rule drives the episodes; the evaluation ranks it beside the
    baselines, and ``--also`` adds more such rules."""
    from msj_gym.agents import improve

    out = tmp_path / "rule.zip"
    argv = ["--actions", "priority-shortest", "--reveal-sizes", "--base", "msj_gym.agents.rules:LsfShortest"]
    argv += ["--load", "0.5", "--decisions", "40", "--rounds", "1", "--epochs", "2"]
    argv += ["--episode-arrivals", "300", "--candidates", "1", "--select-seeds", "1"]
    argv += ["--select-arrivals", "200", "--skip", "20", "--tail", "100", "--out", str(out)]
    improve.main(argv)
    assert json.loads(out.with_suffix(".json").read_text())["base"] == "msj_gym.agents.rules:LsfShortest"
    table = evaluate.main(
        [
            str(out),
            "--seeds",
            "5",
            "--arrivals",
            "200",
            "--also",
            "msj_gym.baselines.priority:MostServersFirst",
        ]
    )
    assert {t["policy"] for t in table} >= {"agent:rule", "lsf-shortest", "lsf", "msf"}
    with pytest.raises(ValueError, match=r"^--base 'msj_gym.agents.rules:Nope': cannot import it"):
        improve.parse_args([*argv[:4], "msj_gym.agents.rules:Nope", *argv[5:]])
    with pytest.raises(ValueError, match=r"^--also 'numpy:pi': expected a Policy"):
        evaluate.main([str(out), "--seeds", "5", "--arrivals", "200", "--also", "numpy:pi"])


def test_shipped_size_aware_agent_beats_the_papers_heuristics_on_bs_fig1_on_a_held_out_seed() -> None:
    # its 20-seed evaluation is in agents/checkpoints/README.md; here one seed it never saw, against
    # the best of the papers' non-preemptive policies there (MaxWeight, LSF)
    from msj_gym import Simulator, rollout
    from msj_gym.baselines import make_policy
    from msj_gym.experiments.agents import load_agent

    loaded = load_agent("rollout-sizes-bs-fig1-k32-0.876")
    assert loaded.env_kwargs["num_servers"] == 32 and loaded.env_kwargs["reveal_sizes"] is True
    env = loaded.make_env("bs-fig1", {"num_servers": 32}, num_arrivals=10000, warmup=1000)
    agent = rollout(env, loaded.model, seed=2024).mean_response_time
    workload = env.unwrapped.workload
    runs = [
        Simulator(workload, make_policy(p), seed=2024, num_arrivals=10000, warmup=1000).run()
        for p in ("max-weight", "lsf", "first-fit")
    ]
    best = min(r.mean_response_time for r in runs)
    assert agent < best - 0.2


def test_train_over_generated_systems_with_the_class_set_network(tmp_path: pathlib.Path) -> None:
    """PPO on the class set with the equivariant network, each episode on one of 3 generated systems;
    the checkpoint then runs on a built-in scenario it never saw (another number of classes)."""
    out = tmp_path / "set.zip"
    argv = ["--algo", "maskable-ppo", "--observation", "classes", "--actions", "priority"]
    argv += ["--policy", "class-set", "--systems", "3", "--timesteps", "128", "--n-envs", "2"]
    argv += ["--advisor", "first-fit,static-quickswap"]  # one action each: follow it
    train.main([*argv, "--n-steps", "64", "--episode-arrivals", "60", "--no-progress", "--out", str(out)])
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["training_systems"] == 3 and "scenario" not in meta["env_kwargs"]
    assert meta["env_kwargs"]["advisor"] == ["first-fit", "static-quickswap"]
    table = evaluate.main([str(out), "--seeds", "5", "--arrivals", "200"])
    assert f"agent:{out.stem}" in {t["policy"] for t in table}


@pytest.mark.parametrize("name", ["generalist", "generalist-sizes"])
def test_shipped_generalists_plan_and_act_on_a_system_they_never_saw(
    name: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The small twin of the slow test below: each shipped generalist plans on sf-fig2 at 0.5 from an
    empty plan cache, its simulated selection and rehearsal scaled down (one seed, 2000 and 1000
    arrivals, where the shipped settings take four seeds of 20,000 and 10,000: a minute per system),
    writes its plan to the cache and runs a stable episode of 1000 arrivals."""
    import dataclasses

    from msj_gym.env.agents import rollout
    from msj_gym.experiments.agents import load_agent

    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path))
    loaded = load_agent(name)
    env = loaded.make_env("sf-fig2", {"load": 0.5}, 1000, 100)
    agent = loaded.agent_for(env)
    network = next(m for m in agent.policy.modules() if getattr(m, "simulated", None) is not None)
    shipped = network.simulated
    assert shipped.rehearse > 0 and len(shipped.seeds) > 1  # what is scaled down here
    network.simulated = dataclasses.replace(shipped, seeds=(0,), arrivals=2000, rehearse=1000)
    try:
        result = rollout(env, agent, seed=2024)
    finally:
        network.simulated = shipped  # the loaded agent is shared within the process
    assert result.stable and result.num_measured == 900
    assert list((tmp_path / "plans").glob("*.json"))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "rivals"), [("generalist", OBLIVIOUS), ("generalist-sizes", SIZE_AWARE)])
def test_shipped_generalists_on_systems_of_two_and_four_classes(name: str, rivals: tuple) -> None:
    """The shipped generalists, on a held-out seed (2024), on systems that were not in their training
    distribution's draws (3,000 arrivals): stable on one-or-all at 0.9 and on four-class at 0.912, and
    ahead of every heuristic of their kind on sf-fig2 at 0.5. Slow: each system's plan, from an empty
    plan cache, takes a minute (the twin above scales it down)."""
    from msj_gym import Simulator
    from msj_gym.baselines import make_policy
    from msj_gym.env.agents import rollout
    from msj_gym.experiments.agents import load_agent

    loaded = load_agent(name)
    for scenario, load in (("sf-fig2", 0.5), ("one-or-all", 0.9), ("four-class", 0.912)):
        env = loaded.make_env(scenario, {"load": load}, 3000, 300)
        result = rollout(env, loaded.agent_for(env), seed=2024)
        assert result.stable, (name, scenario)
        if scenario == "sf-fig2":
            wl = env.unwrapped.workload
            best = min(
                Simulator(wl, make_policy(p), seed=2024, num_arrivals=5000, warmup=500)
                .run()
                .mean_response_time
                for p in rivals
            )
            assert result.mean_response_time < best, (name, result.mean_response_time, best)
