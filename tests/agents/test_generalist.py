"""The multi-system rollout improvement (``msj_gym.agents.generalist``) at a tiny budget: the same data in one
process, in worker processes and on Ray; a checkpoint that runs on systems with other numbers of
classes; the agent entering the benchmark by path."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the generalist needs the rl extra (sb3-contrib, torch)")

from msj_gym.agents import generalist
from msj_gym.experiments.runner import map_unordered
from msj_gym.workloads.generator import sample_systems

TINY = [
    "--systems", "2", "--select-systems", "1", "--decisions", "40", "--rounds", "2", "--candidates", "1",
    "--epochs", "1", "--select-arrivals", "200", "--select-seeds", "1", "--episode-arrivals", "300",
    "--skip", "30", "--tail", "100", "--hidden", "8", "--selector-systems", "3", "--follow-biases", "2",
    "--guard-ages", "5",
]  # fmt: skip


def _tasks(backend_args: list[str], follow: dict | None = None) -> list[dict]:
    args = generalist.parse_args([*TINY, *backend_args, "--out", "x.zip"])
    systems = sample_systems(args.seed, args.systems)
    return generalist._round_tasks(
        args, systems, np.arange(len(systems)) % 3, int(follow is not None), follow
    )


def _collect(
    backend: str, workers: int, follow: dict | None = None, more: list[str] | None = None
) -> list[dict[str, np.ndarray]]:
    tasks = _tasks(more or [], follow)
    done = sorted(
        map_unordered(generalist.collect_system, tasks, backend, workers), key=lambda x: x[0]["index"]
    )
    return [part for _, part in done]


def _same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert set(x) == set(y)
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def test_collection_is_the_same_in_one_process_and_in_workers() -> None:
    one = _collect("local", 1)
    assert sum(len(p["cost"]) for p in one) == 40
    for part in one:
        valid = ~np.isnan(part["cost"])
        assert (valid == part["mask"]).all()  # every valid action compared, and only those
        assert (part["obs"] >= 0).all() and (part["obs"] <= 1).all()
    _same(one, _collect("local", 2))


@pytest.mark.slow
def test_collection_is_the_same_on_ray() -> None:
    # slow: a local Ray starts for it (the leaderboard's Ray backend is tested in the default run)
    pytest.importorskip("ray", reason="the Ray backend needs ray (the dev or ray extra)")
    _same(_collect("local", 1), _collect("ray", 2))


def test_the_advisor_play_out_is_the_same_in_one_process_and_in_workers() -> None:
    """``--play-out advisor --persist 2``: the branches follow the system's base as the env's advisor
    (its data carried on) and keep their action for two decisions; the data do not depend on the
    workers, and the costs are not the fresh base's."""
    more = ["--play-out", "advisor", "--persist", "2"]
    one = _collect("local", 1, more=more)
    assert sum(len(p["cost"]) for p in one) == 40
    for part in one:
        assert (~np.isnan(part["cost"]) == part["mask"]).all()
    _same(one, _collect("local", 2, more=more))
    fresh = _collect("local", 1)
    assert not all(
        np.array_equal(a["cost"], b["cost"], equal_nan=True) for a, b in zip(one, fresh, strict=True)
    )


def test_a_round_driven_by_the_network_is_the_same_in_one_process_and_in_workers() -> None:
    """Later rounds: episodes side by side, the network deciding for all of them in one batch."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    args = generalist.parse_args([*TINY, "--out", "x.zip"])
    env = gym.make(
        "MSJ-v0", scenario=sample_systems(args.seed, 1)[0], **generalist.env_kwargs(False, args.bases)
    )
    net = MaskablePPO(ClassSetMaskablePolicy, env, seed=0, policy_kwargs={"hidden": 8}, device="cpu")
    follow = {"policy_kwargs": {"hidden": 8}, "weights": net.policy.state_dict()}
    one = _collect("local", 1, follow)
    assert sum(len(p["cost"]) for p in one) == 40
    for part in one:
        assert (~np.isnan(part["cost"]) == part["mask"]).all()
    _same(one, _collect("local", 2, follow))
    assert not np.array_equal(one[0]["obs"], _collect("local", 1)[0]["obs"])  # not the base's episodes


def test_train_tiny_and_run_on_other_systems(tmp_path: pathlib.Path, capsys) -> None:
    out = tmp_path / "g.zip"
    generalist.main([*TINY, "--out", str(out), "--data", str(tmp_path / "data")])
    meta = json.loads(out.with_suffix(".json").read_text())
    advisors = ["first-fit", "adaptive-quickswap", "static-quickswap"]
    assert meta["env_kwargs"] == {"observation": "classes", "actions": "priority", "advisor": advisors}
    assert meta["decisions"] == 80 and meta["training_systems"] == 2
    # the following can be chosen again on its own
    again = tmp_path / "again.zip"
    generalist.main([*TINY, "--retune", str(out), "--guard-queues", "3", "--out", str(again)])
    retuned = json.loads(again.with_suffix(".json").read_text())
    assert retuned["follow_bias"] in (0.0, 2.0) and "retuned_by" in retuned
    assert retuned["follow_when_queue_over_k"] in (None, 3.0)
    assert meta["follow_when_queue_over_k"] is None  # no queue guard tried
    # a gate fitted on its own: written only if it lowers the cross-validated excess and breaks
    # nothing on the selection systems
    capsys.readouterr()
    gated = tmp_path / "gated.zip"
    generalist.main([*TINY, "--fit-gate", str(out), "--gate-systems", "3", "--out", str(gated)])
    said = capsys.readouterr().out
    assert "gate systems: the agent is better than its followed base on" in said
    if gated.exists():
        gmeta = json.loads(gated.with_suffix(".json").read_text())
        assert gmeta["gate_selection_ratio_to_ungated"] < generalist.GATE_SELECTION_TOLERANCE
        assert gmeta["gate_cross_validated_excess"] < gmeta["gate_excess_trusting_network"]
        assert gmeta["gate_systems"] == 3 and "gate_fitted_by" in gmeta
    else:
        assert "the gate is not kept" in said and "nothing written" in said
    # a checkpoint with a gate already is refused, not fitted again over its gate
    import shutil

    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.checkpoint import load_model, save_model
    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    env = gym.make("MSJ-v0", scenario="sf-fig2", **meta["env_kwargs"])
    twin = MaskablePPO(ClassSetMaskablePolicy, env, policy_kwargs={"hidden": 8, "gate": True})
    twin.policy.load_state_dict(load_model(out).policy.state_dict(), strict=False)
    save_model(twin, tmp_path / "twin.zip")
    shutil.copy(out.with_suffix(".json"), tmp_path / "twin.json")
    with pytest.raises(ValueError, match=r"--fit-gate: .* has a gate already"):
        generalist.main([*TINY, "--fit-gate", str(tmp_path / "twin.zip"), "--out", str(tmp_path / "t2.zip")])
    # the base followed chosen by simulating each on the observed system: the network, guard and gate
    # unchanged, both selection ratios recorded
    capsys.readouterr()
    simulated = tmp_path / "simulated.zip"
    generalist.main(
        [
            *TINY,
            "--simulate-selection",
            str(out),
            "--selection-arrivals",
            "500",
            "--rehearse",
            "300",
            "--fallbacks",
            "lsf,msf",
            "--no-rehearse-fallbacks",
            "--out",
            str(simulated),
        ]
    )
    logged = capsys.readouterr().out
    assert "rehearsing 300 arrivals, fallbacks lsf,msf (followed without rehearsal)" in logged
    smeta = json.loads(simulated.with_suffix(".json").read_text())
    assert smeta["simulated_selection"]["bases"] == advisors
    assert smeta["simulated_selection"]["fallbacks"] == smeta["fallbacks"] == ["lsf", "msf"]
    assert smeta["simulated_selection"]["arrivals"] == 500
    assert smeta["simulated_selection"]["rehearse"] == 300
    assert smeta["simulated_selection"]["rehearse_fallbacks"] is False
    # the fallbacks are the env's advisors after the bases, the rest of the env as it was
    assert smeta["env_kwargs"] == {**meta["env_kwargs"], "advisor": [*advisors, "lsf", "msf"]}
    assert smeta["simulated_selection"]["env_kwargs"] == smeta["env_kwargs"]
    assert "selection_ratio_with_selector_head" in smeta and "simulated_selection_by" in smeta
    net = load_model(simulated).policy.mlp_extractor
    assert net.simulated is not None and net.simulated.config() == smeta["simulated_selection"]
    plain = load_model(out).policy.mlp_extractor.state_dict()
    for key, value in net.state_dict().items():  # the weights are the checkpoint's
        assert (value == plain[key]).all(), key
    # the bases are the checkpoint's; others are refused, and one derivation at a time
    for argv, match in (
        (["--simulate-selection", str(out), "--bases", "first-fit"], "--bases: the checkpoint follows"),
        (["--simulate-selection", str(out), "--retune", str(out)], "--retune and --simulate-selection"),
    ):
        with pytest.raises(ValueError, match=match):
            generalist.parse_args([*argv, "--out", str(tmp_path / "x.zip")])
    # each round's decisions and kept fit are in the data folder
    text = sorted(p.name for p in (tmp_path / "data").iterdir())
    assert text == ["round-1.npz", "round-1.zip", "round-2.npz", "round-2.zip"]
    # a rerun that changes only the following's tuning (after every round) reuses both rounds' decisions
    capsys.readouterr()
    rerun = [
        *TINY,
        "--follow-biases",
        "5",
        "--out",
        str(tmp_path / "b.zip"),
        "--data",
        str(tmp_path / "data"),
    ]
    generalist.main(rerun)
    said = capsys.readouterr().out
    assert "round 1: 40 compared decisions from" in said and "round 2: 40 compared decisions from" in said
    from msj_gym.experiments.agents import load_agent

    loaded = load_agent(str(out))
    for scenario, build in (("sf-fig2", {"load": 0.7}), ("four-class", {"load": 0.8})):
        env = loaded.make_env(scenario, build, num_arrivals=200, warmup=20)
        from msj_gym.env.agents import rollout

        result = rollout(env, loaded.agent_for(env), seed=4)
        assert result.num_measured > 0


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--bases", "server-filling"], "--bases: 'server-filling' preempts or reads sizes"),
        (["--bases", "easy-backfilling"], "--bases: 'easy-backfilling' preempts or reads sizes"),
        (["--bases", "nope"], "--bases 'nope'"),
        (["--bases", "first-fit,msfq"], "--bases: 'msfq' is not defined on every system (policy"),
        (["--select-arrivals", "1"], "--select-arrivals: expected an integer >= 2, got 1"),
        (["--systems", "0"], "--systems: expected a positive integer, got 0"),
        (["--persist", "0"], "--persist: expected a positive integer, got 0"),
        (["--wide-weight", "0"], "--wide-weight: expected a positive number, got 0.0"),
        (["--wide-weight", "nan"], "--wide-weight: expected a positive number, got nan"),
        (["--play-out", "native"], "--play-out: invalid choice: 'native'"),
        (["--skip", "300", "--tail", "1800"], "--skip + --tail"),
        (["--out", "g.pt"], "--out: expected a .zip path"),
        (["--retune", "nope.zip"], "--retune: expected a checkpoint .zip with its .json"),
        (["--fit-gate", "nope.zip"], "--fit-gate: expected a checkpoint .zip with its .json"),
        (["--gate-systems", "0"], "--gate-systems: expected a positive integer, got 0"),
        (["--simulate-selection", "nope.zip"], "--simulate-selection: expected a checkpoint .zip with"),
        (["--selection-seeds", "0"], "--selection-seeds: expected a positive integer, got 0"),
        (["--selection-arrivals", "-5"], "--selection-arrivals: expected a positive integer, got -5"),
        (["--selection-lean", "nan"], "--selection-lean: expected a non-negative number, got nan"),
        (["--selection-lean", "-0.1"], "--selection-lean: expected a non-negative number, got -0.1"),
        (["--rehearse", "-1"], "--rehearse: expected a whole number of arrivals (0: off), got -1"),
        (["--rehearse-trust", "1"], "--rehearse-trust: expected a share in (-1, 1), got 1.0"),
        (["--rehearse-trust", "-1"], "--rehearse-trust: expected a share in (-1, 1), got -1.0"),
        (["--rehearse-trust", "nan"], "--rehearse-trust: expected a share in (-1, 1), got nan"),
        (["--fallbacks", "lsf"], "--fallbacks: expected with --simulate-selection"),
        (["--no-rehearse-fallbacks"], "--no-rehearse-fallbacks: expected with --rehearse and --fallbacks"),
        (["--all-flagged", "first"], "--all-flagged: invalid choice: 'first'"),
        (["--rescue", "pick"], "--rescue: invalid choice: 'pick'"),
        (["--rescue", "alone"], "--rescue alone: expected with --simulate-selection and --rehearse"),
        (["--guard-ages", "x"], "--guard-ages: expected comma-separated numbers"),
        (["--guard-queues", "-1"], "--guard-queues: expected non-negative finite numbers"),
    ],
)
def test_bad_arguments(argv: list[str], match: str, capsys) -> None:
    from msj_gym.agents._cli import run_script

    code = run_script("python -m msj_gym.agents.generalist", generalist.parse_args, ["--out", "x.zip", *argv])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0], err


SHIPPED = pathlib.Path(generalist.__file__).parent / "checkpoints" / "generalist.zip"


@pytest.mark.parametrize(
    ("fallbacks", "match"),
    [
        ("server-filling", "--fallbacks: 'server-filling' preempts or reads sizes"),
        ("easy-backfilling", "--fallbacks: 'easy-backfilling' preempts or reads sizes"),
        ("nope", "--fallbacks 'nope'"),
        ("lsf,msfq", "--fallbacks: 'msfq' is not defined on every system (policy 'msfq': needs a one-or-all"),
        ("lsf,first-fit", "--fallbacks: expected heuristics other than the bases, each once, got first-fit"),
        ("lsf,lsf", "--fallbacks: expected heuristics other than the bases, each once, got lsf"),
    ],
)
def test_bad_fallbacks(fallbacks: str, match: str, capsys) -> None:
    from msj_gym.agents._cli import run_script

    argv = ["--out", "x.zip", "--simulate-selection", str(SHIPPED), "--fallbacks", fallbacks]
    code = run_script("python -m msj_gym.agents.generalist", generalist.parse_args, argv)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0], err


@pytest.mark.parametrize("rehearse", [[], ["--rehearse", "0"]])
def test_fallbacks_followed_without_rehearsal_need_a_rehearsal(rehearse: list[str], capsys) -> None:
    from msj_gym.agents._cli import run_script

    argv = ["--out", "x.zip", "--simulate-selection", str(SHIPPED), "--fallbacks", "lsf", *rehearse]
    code = run_script(
        "python -m msj_gym.agents.generalist", generalist.parse_args, [*argv, "--no-rehearse-fallbacks"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--no-rehearse-fallbacks: expected with --rehearse and" in err[0], err


def test_wide_weight_splits_the_decisions_towards_full_width_systems() -> None:
    systems = sample_systems(0, 12)
    wide = np.array([generalist.has_full_width_class(w) for w in systems])
    assert wide.any() and not wide.all()  # both kinds among these 12
    for w, flag in zip(systems, wide, strict=True):
        assert flag == (max(c.server_need for c in w.classes) == w.num_servers)
    even = generalist.decision_shares(1000, systems)
    assert (even == 84).all()  # ceil(1000 / 12), as before the flag
    shares = generalist.decision_shares(1000, systems, 3.0)
    assert 1000 <= shares.sum() < 1000 + len(systems)  # rounded up, at most one each
    assert (shares[wide] == shares[wide][0]).all() and (shares[~wide] == shares[~wide][0]).all()
    assert abs(shares[wide][0] / shares[~wide][0] - 3.0) < 0.05
    args = generalist.parse_args([*TINY, "--wide-weight", "3", "--out", "x.zip"])
    tasks = generalist._round_tasks(args, sample_systems(args.seed, args.systems), np.zeros(2, int), 0, None)
    assert [t["decisions"] for t in tasks] == list(generalist.decision_shares(40, sample_systems(0, 2), 3.0))


def test_the_weights_digest_tells_networks_apart() -> None:
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    env = gym.make("MSJ-v0", scenario="sf-fig2", **generalist.env_kwargs(False, ("first-fit",)))
    a, b = (MaskablePPO(ClassSetMaskablePolicy, env, seed=s, policy_kwargs={"hidden": 8}) for s in (0, 1))
    assert generalist._weights_digest(a) != generalist._weights_digest(b)
    b.policy.load_state_dict(a.policy.state_dict())
    assert generalist._weights_digest(a) == generalist._weights_digest(b)
