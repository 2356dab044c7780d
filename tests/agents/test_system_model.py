"""The system a class-set observation describes (``msj_gym.agents.system_model``): rebuilt from the
observation alone, the same whatever the classes' order, and the base a simulated selector follows on
it; in the class-set network, the simulated pick replaces the selector head's where the observation
determines the system, and a checkpoint keeps it."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.agents.system_model import (
    SimulatedSelector,
    duration_with_moments,
    system_from_class_set,
    unsquash,
)
from msj_gym.env.layout import SET_SYSTEM_FEATURES
from msj_gym.env.observe import squash
from msj_gym.workloads.distributions import Deterministic, Erlang, Exponential, HyperExponential, Uniform
from msj_gym.workloads.generator import sample_systems
from msj_gym.workloads.workload import JobClass, Workload

BASES = ["first-fit", "adaptive-quickswap", "static-quickswap"]
KWARGS = {"observation": "classes", "actions": "priority", "advisor": BASES}
FEATURES = 14


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test its own plans on disk: none left from another test or run."""
    monkeypatch.setenv("MSJ_GYM_CACHE", str(tmp_path / "cache"))


def _first_observation(scenario, **kw) -> np.ndarray:
    env = gym.make("MSJ-v0", scenario=scenario, num_arrivals=50, **KWARGS, **kw)
    obs, _ = env.reset(seed=0)
    return obs


def _measured(means) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :meth:`SimulatedSelector.measure` gives where no run is flagged: each heuristic's mean
    response time, no run flagged, and the same means by Little's law."""
    means = np.array(means, dtype=float)
    return means, np.zeros(means.size), means


def _moments(workload: Workload) -> list[tuple]:
    """Each class's need, arrival share, mean duration over the system's and SCV, sorted."""
    mean = sum(c.probability * c.service_time.mean for c in workload.classes)
    return sorted(
        (c.server_need, c.probability, c.service_time.mean / mean, c.service_time.scv)
        for c in workload.classes
    )


@pytest.mark.parametrize("x", [0.0, 1e-6, 0.3, 1.0, 7.5, 40.0, 1e4])
def test_unsquash_inverts_the_observations_squash(x: float) -> None:
    assert unsquash(squash.py_func(x)) == pytest.approx(x, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("y", [1.0, -0.1, math.nan])
def test_unsquash_refuses_values_outside_its_range(y: float) -> None:
    with pytest.raises(ValueError, match="squashed value"):
        unsquash(y)


@pytest.mark.parametrize("scenario", ["sf-fig2", "one-or-all", "four-class", "bs-fig1", "borg-cellb"])
def test_the_rebuilt_system_is_the_scenarios_own(scenario: str) -> None:
    env = gym.make("MSJ-v0", scenario=scenario, load=0.7, num_arrivals=50, **KWARGS)
    obs, _ = env.reset(seed=0)
    real = env.unwrapped.workload
    rebuilt = system_from_class_set(obs, FEATURES)
    assert rebuilt is not None
    assert rebuilt.num_servers == real.num_servers
    assert rebuilt.load == pytest.approx(real.load, rel=1e-5)
    for got, want in zip(_moments(rebuilt), _moments(real), strict=True):
        assert got[0] == want[0]
        np.testing.assert_allclose(got[1:], want[1:], rtol=1e-5)
    # the scenarios' durations are exponential: so are the rebuilt ones, not a near-1 gamma
    assert {c.service_time.kind for c in rebuilt.classes} == {"exponential"}


def test_durations_keep_their_first_two_moments() -> None:
    classes = [
        JobClass(1, Erlang(3, 2.0), 0.3, "erlang"),
        JobClass(2, Uniform(0.0, 4.0), 0.3, "uniform"),
        JobClass(4, HyperExponential(mean=0.5, scv=6.0), 0.2, "h2"),
        JobClass(8, Deterministic(3.0), 0.1, "fixed"),
        JobClass(16, Exponential(1.5), 0.1, "exp"),
    ]
    real = Workload(num_servers=37, classes=classes, load=0.6, name="mixed")
    rebuilt = system_from_class_set(_first_observation(real), FEATURES)
    assert rebuilt is not None and rebuilt.num_servers == 37
    for got, want in zip(_moments(rebuilt), _moments(real), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    kinds = {c.server_need: c.service_time.kind for c in rebuilt.classes}
    assert kinds == {1: "gamma", 2: "gamma", 4: "hyperexponential", 8: "deterministic", 16: "exponential"}


def test_duration_family_by_scv() -> None:
    assert isinstance(duration_with_moments(2.0, 0.0), Deterministic)
    assert isinstance(duration_with_moments(2.0, 1.0 + 1e-6), Exponential)
    assert duration_with_moments(2.0, 0.25).kind == "gamma"
    heavy = duration_with_moments(2.0, 1e6)  # a trace class without a finite second moment
    assert heavy.kind == "hyperexponential" and heavy.scv == pytest.approx(100.0)


def test_listing_the_classes_in_another_order_rebuilds_the_same_system() -> None:
    system = sample_systems(7, 1)[0]
    order = np.random.default_rng(3).permutation(len(system.classes))
    shuffled = Workload(
        num_servers=system.num_servers,
        classes=[system.classes[i] for i in order],
        load=system.load,
        name="shuffled",
    )
    a = system_from_class_set(_first_observation(system), FEATURES)
    b = system_from_class_set(_first_observation(shuffled), FEATURES)
    assert a is not None and b is not None
    assert [(c.server_need, c.probability, c.service_time.mean) for c in a.classes] == [
        (c.server_need, c.probability, c.service_time.mean) for c in b.classes
    ]
    selector = SimulatedSelector(bases=BASES, safest=1, arrivals=2000)
    np.testing.assert_array_equal(
        selector.means(a), SimulatedSelector(bases=BASES, safest=1, arrivals=2000).means(b)
    )
    # the selector picks once for both orders: the second is found under the canonical order
    first = selector.choose(_first_observation(system)[None], FEATURES)
    selector.measure = None  # simulating again would fail
    assert selector.choose(_first_observation(shuffled)[None], FEATURES).tolist() == first.tolist()


def test_an_overloaded_system_is_not_determined() -> None:
    obs = _first_observation("sf-fig2", load=1.2)
    assert system_from_class_set(obs, FEATURES) is None
    selector = SimulatedSelector(bases=BASES, safest=1, arrivals=500)
    assert selector.choose(obs[None], FEATURES).tolist() == [-1]


def test_an_observation_no_system_has_is_left_to_the_caller() -> None:
    obs = _first_observation("sf-fig2", load=0.7)
    obs[SET_SYSTEM_FEATURES + 3] = 0.0  # the first class's arrival share: a class that never arrives
    with pytest.raises(ValueError):
        system_from_class_set(obs, FEATURES)
    assert SimulatedSelector(bases=BASES, safest=1).choose(obs[None], FEATURES).tolist() == [-1]


def test_the_pick_leans_towards_the_safe_base() -> None:
    selector = SimulatedSelector(bases=BASES, safest=1, lean=0.05)
    assert selector.pick(np.array([1.00, 1.04, 2.0])) == 1  # within the lean: the safe base
    assert selector.pick(np.array([1.00, 1.06, 2.0])) == 0
    assert selector.pick(np.array([math.inf, 3.0, 1.0])) == 2
    assert selector.pick(np.array([math.inf, math.inf, math.inf])) == 1  # nothing tells them apart


def test_where_every_heuristic_is_flagged_the_pick_goes_by_littles_law_among_the_least_flagged() -> None:
    selector = SimulatedSelector(bases=BASES, safest=1, lean=0.05, fallbacks=["lsf"])
    flagged = np.array([1, 1, 2, 1])
    means = np.full(4, math.inf)
    # the least by Little's law (index 2) is flagged on more runs: left out
    assert selector.pick(means, flagged, np.array([1.0, 2.0, 0.5, 3.0])) == 0
    assert selector.pick(means, flagged, np.array([1.0, 1.04, 0.5, 3.0])) == 1  # the lean, as ever
    assert selector.pick(means, flagged, np.array([1.0, 1.2, 0.5, 0.9])) == 3  # a fallback by the lean
    assert selector.pick(means, flagged, np.array([1.0, 1.2, 0.5, 0.97])) == 0
    assert selector.pick(means) == 1  # nothing to compare: the safe base
    assert selector.pick(means, flagged, np.full(4, math.inf)) == 1
    # a heuristic stable on every run goes first, however the flagged ones look by Little's law
    assert selector.pick(np.array([math.inf, math.inf, 9.0, math.inf]), flagged, np.full(4, 0.1)) == 2
    safest = SimulatedSelector(bases=BASES, safest=1, fallbacks=["lsf"], all_flagged="safest")
    assert safest.pick(means, flagged, np.array([1.0, 2.0, 0.5, 3.0])) == 1


def test_littles_law_counts_the_jobs_a_starving_heuristic_leaves_waiting() -> None:
    from msj_gym import Simulator
    from msj_gym.agents.system_model import little_mean
    from msj_gym.registry import policy_from_spec

    first_fit = policy_from_spec("first-fit")
    calm = Simulator(sample_systems(5, 1)[0], first_fit, seed=0, num_arrivals=20_000).run()
    assert calm.stable
    assert little_mean(calm) == pytest.approx(calm.mean_response_time, rel=0.05)
    # one job in 200 needs all 32 servers, the rest one: First-Fit lets the narrow ones pass it
    starved = Workload(
        num_servers=32,
        classes=[
            JobClass(1, Exponential(1.0), 0.995, "narrow"),
            JobClass(32, Exponential(1.0), 0.005, "wide"),
        ],
        load=0.6,
        name="starved",
    )
    sims = [Simulator(starved, first_fit, seed=s, num_arrivals=5000) for s in (0, 1)]
    runs = [sim.run() for sim in sims]
    left = [sim.result(ended=False) for sim in sims]  # the jobs that left, alone
    assert not any(r.stable for r in runs)
    # the mean over the jobs that left hides the starving; Little's law counts the jobs still waiting,
    # and so does the result of a run stopped with them there
    assert all(little_mean(r) > 1.5 * x.mean_response_time for r, x in zip(runs, left, strict=True))
    assert all(r.mean_response_time > 1.5 * x.mean_response_time for r, x in zip(runs, left, strict=True))
    selector = SimulatedSelector(bases=BASES, safest=1, arrivals=5000, fallbacks=["lsf"])
    means, flagged, little = selector.measure(starved)
    assert flagged.tolist()[0] == 2 and not math.isfinite(means[0])
    assert little[0] == pytest.approx(np.mean([little_mean(r) for r in runs]))


def test_the_simulated_pick_is_the_best_base_on_the_rebuilt_system() -> None:
    obs = _first_observation("one-or-all", load=0.9)
    selector = SimulatedSelector(bases=BASES, safest=1, arrivals=3000, lean=0.0)
    means = selector.means(system_from_class_set(obs, FEATURES))
    # First-Fit starves the need-32 class of one-or-all at 0.9: a Quickswap is followed
    assert not math.isfinite(means[0]) or means[0] > min(means[1:])
    calls = []
    simulate = selector.measure
    selector.measure = lambda w: calls.append(w) or simulate(w)
    pick = selector.choose(np.stack([obs, obs]), FEATURES)
    assert pick.tolist() == [int(np.argmin(means))] * 2
    assert selector.choose(obs[None], FEATURES).tolist() == [pick[0]]
    assert len(calls) == 1  # one system: simulated once


def test_a_fallback_must_beat_every_base_by_the_lean_and_is_followed_throughout() -> None:
    selector = SimulatedSelector(bases=BASES, safest=1, lean=0.05, fallbacks=["lsf", "msf"])
    assert selector.followable == (*BASES, "lsf", "msf")
    # lsf the least, but within the lean of the safe base (twice the lean): the safe base
    assert selector.pick(np.array([1.0, 1.04, 2.0, 0.97, 3.0])) == 1
    assert selector.pick(np.array([1.0, 1.2, 2.0, 0.97, 3.0])) == 0  # within the lean of a base
    assert selector.pick(np.array([1.0, 1.2, 2.0, 0.90, 3.0])) == 3
    assert selector.pick(np.array([math.inf, math.inf, math.inf, 2.0, math.inf])) == 3
    obs = _first_observation("sf-fig2", load=0.7)
    for i, (means, want) in enumerate(
        (([1.0, 1.2, 2.0, 0.9, 3.0], (3, 1)), ([1.0, 1.2, 2.0, 1.0, 3.0], (0, -1)))
    ):
        # other settings each time: a plan kept on disk is not served to the other means
        fresh = SimulatedSelector(
            bases=BASES, safest=1, lean=0.05, fallbacks=["lsf", "msf"], arrivals=1000 + i
        )
        fresh.measure = lambda w, m=means: _measured(m)
        picks, modes, _ = fresh.plan(obs[None], FEATURES)
        assert (int(picks[0]), int(modes[0])) == want  # a fallback is followed: settled without the gate


def test_the_fallbacks_are_simulated_after_the_bases() -> None:
    obs = _first_observation("one-or-all", load=0.7)
    workload = system_from_class_set(obs, FEATURES)
    plain = SimulatedSelector(bases=BASES, safest=1, arrivals=2000).means(workload)
    both = SimulatedSelector(bases=BASES, safest=1, arrivals=2000, fallbacks=["msf"]).means(workload)
    alone = SimulatedSelector(bases=["msf"], safest=0, arrivals=2000).means(workload)
    assert both.tolist() == [*plain, *alone]


def test_a_plan_is_kept_on_disk_for_the_same_selector_system_and_network_only(tmp_path) -> None:
    obs = _first_observation("sf-fig2", load=0.7)
    calls = []

    def selector(**kw) -> SimulatedSelector:
        made = SimulatedSelector(**{"bases": BASES, "safest": 1, "arrivals": 1000, **kw})
        made.measure = lambda w: calls.append("means") or _measured([1.0, 2.0, 3.0])
        return made

    def rehearsal(workload, pick):
        calls.append("rehearsal")
        return np.array([3.0, 2.0, 2.5]), 2.5

    first = selector().plan(obs[None], FEATURES)
    assert calls == ["means"]
    again = selector().plan(obs[None], FEATURES)  # a new selector, as in another process: from disk
    assert calls == ["means"] and [a.tolist() for a in again] == [a.tolist() for a in first]
    selector(arrivals=1001).plan(obs[None], FEATURES)  # other settings: simulated again
    assert calls == ["means"] * 2
    rehearsing = {"rehearse": 300, "env_kwargs": KWARGS}
    got = selector(**rehearsing).plan(obs[None], FEATURES, rehearsal, lambda: "weights-a")
    assert [a.tolist() for a in got] == [[1], [0], [0]] and calls[2:] == ["means", "rehearsal"]
    selector(**rehearsing).plan(obs[None], FEATURES, rehearsal, lambda: "weights-a")
    assert len(calls) == 4  # the same network: from disk
    selector(**rehearsing).plan(obs[None], FEATURES, rehearsal, lambda: "weights-b")
    assert len(calls) == 6  # another network: rehearsed again
    selector(**rehearsing).plan(obs[None], FEATURES, rehearsal)
    selector(**rehearsing).plan(obs[None], FEATURES, rehearsal)
    assert len(calls) == 10  # no digest of the network: kept in the process only
    for entry in (tmp_path / "cache" / "plans").iterdir():  # a damaged entry is computed again
        entry.write_text("{not json")
    assert [a.tolist() for a in selector().plan(obs[None], FEATURES)] == [a.tolist() for a in first]
    assert len(calls) == 11


def test_selectors_meeting_one_new_system_at_once_plan_it_once(capsys) -> None:
    """Two selectors (as in two workers) planning the same system at the same time: the second waits
    for the first's plan, saying so, and reads it from disk instead of simulating again."""
    import threading
    import time

    obs = _first_observation("sf-fig2", load=0.7)
    calls: list[str] = []
    go = threading.Event()

    def selector(name: str) -> SimulatedSelector:
        made = SimulatedSelector(bases=BASES, safest=1, arrivals=1000)

        def measure(workload):
            calls.append(name)
            go.wait(timeout=60)
            return _measured([1.0, 2.0, 3.0])

        made.measure = measure
        return made

    got: dict[str, list] = {}

    def plan(name: str) -> None:
        got[name] = [a.tolist() for a in selector(name).plan(obs[None], FEATURES)]

    first = threading.Thread(target=plan, args=("first",))
    first.start()
    deadline = time.monotonic() + 60
    while calls != ["first"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    second = threading.Thread(target=plan, args=("second",))
    second.start()
    said = ""
    while "waiting for its result" not in said:
        assert time.monotonic() < deadline
        time.sleep(0.01)
        said += capsys.readouterr().err
    go.set()
    first.join(timeout=60)
    second.join(timeout=60)
    assert calls == ["first"] and got["second"] == got["first"] == [[0], [-1], [0]]
    assert "another process is planning the agent on the same system (k = 8, 2 classes, load 0.7)" in said


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bases": ["first-fit", "nope"], "safest": 0}, "nope"),
        ({"bases": BASES, "safest": 0, "fallbacks": ["nope"]}, "fallbacks 'nope'"),
        ({"bases": BASES, "safest": 0, "fallbacks": ["lsf", "first-fit"]}, "expected each heuristic once"),
        ({"bases": BASES, "safest": 0, "fallbacks": ["msfq"]}, "fallbacks: 'msfq' is not defined on every"),
        ({"bases": ["msfq", "first-fit"], "safest": 1}, "bases: 'msfq' is not defined on every system"),
        ({"bases": BASES, "safest": 0, "fallbacks": ["lsf", "lsf"]}, "got lsf twice"),
        ({"bases": BASES, "safest": 3}, "safest: expected a base index below 3, got 3"),
        ({"bases": BASES, "safest": 0, "lean": math.nan}, "lean: expected a non-negative number, got nan"),
        ({"bases": BASES, "safest": 0, "lean": -0.1}, "lean: expected a non-negative number"),
        ({"bases": BASES, "safest": 0, "arrivals": 0}, "seeds, arrivals"),
        ({"bases": BASES, "safest": 0, "seeds": ()}, "seeds, arrivals"),
        ({"bases": BASES, "safest": 0, "rehearse": -1}, "rehearse: expected a whole number of arrivals"),
        ({"bases": BASES, "safest": 0, "rehearse": 2.5}, "rehearse: expected a whole number of arrivals"),
        ({"bases": BASES, "safest": 0, "rehearse": True}, "rehearse: expected a whole number of arrivals"),
        ({"bases": BASES, "safest": 0, "trust": 1.0}, r"trust: expected a share in \(-1, 1\), got 1.0"),
        ({"bases": BASES, "safest": 0, "trust": -1.0}, r"trust: expected a share in \(-1, 1\), got -1.0"),
        ({"bases": BASES, "safest": 0, "trust": math.nan}, "trust: expected a share"),
        ({"bases": BASES, "safest": 0, "rehearse_fallbacks": "no"}, "rehearse_fallbacks: expected True or"),
        ({"bases": BASES, "safest": 0, "all_flagged": "mean"}, "all_flagged: expected one of little, safest"),
        ({"bases": BASES, "safest": 0, "rescue": "pick"}, "rescue: expected one of base, alone, got 'pick'"),
        ({"bases": BASES, "safest": 0, "rehearse": 100}, "env_kwargs: the agent's env keywords are needed"),
    ],
)
def test_bad_selector_settings(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SimulatedSelector(**kwargs)


def test_the_network_follows_the_simulated_pick_and_a_checkpoint_keeps_it(tmp_path) -> None:
    pytest.importorskip("sb3_contrib", reason="the class-set policy needs the rl extra (sb3-contrib, torch)")
    import torch as th
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    env = gym.make("MSJ-v0", scenario="one-or-all", load=0.9, num_arrivals=200, **KWARGS)
    config = SimulatedSelector(bases=BASES, safest=1, arrivals=3000).config()
    model = MaskablePPO(
        ClassSetMaskablePolicy, env, seed=0, policy_kwargs={"hidden": 8, "simulated_selection": config}
    )
    net = model.policy.mlp_extractor
    obs, _ = env.reset(seed=0)
    overloaded = _first_observation("one-or-all", load=1.1)
    x = th.as_tensor(np.stack([obs, overloaded]))
    picked = net.selected(x)[:, 0].tolist()
    want = net.simulated.choose(obs[None], FEATURES)[0]
    head = int(net.selector_logits(x)[1].argmax())
    assert picked == [want, head]  # the overloaded system is not determined: the head's pick
    # only the picked advisor's action is scored
    logits = net.forward_actor(x[:1])[0]
    followed = logits[-len(BASES) :] > -1e8
    assert followed.tolist() == [j == want for j in range(len(BASES))]
    from msj_gym.agents.checkpoint import load_model, save_model

    save_model(model, tmp_path / "m.zip")  # the selector's settings travel as data
    again = load_model(tmp_path / "m.zip").policy.mlp_extractor
    assert again.simulated is not None and again.simulated.config() == config
    with pytest.raises(ValueError, match="simulated_selection: expected 3 bases"):
        MaskablePPO(
            ClassSetMaskablePolicy,
            env,
            policy_kwargs={"hidden": 8, "simulated_selection": {**config, "bases": BASES[:2]}},
        )


def _rehearsing(**kw) -> SimulatedSelector:
    return SimulatedSelector(bases=BASES, safest=1, arrivals=2000, rehearse=500, env_kwargs=KWARGS, **kw)


@pytest.mark.parametrize(
    ("network", "followed", "trust", "lean", "want"),
    [
        ([3.0, 2.0, 2.5], 2.2, 0.02, 0.0, (1, 0)),  # the network with its best base, by more than the trust
        ([3.0, 2.0, 2.5], 2.0, 0.0, 0.0, (0, 1)),  # a tie is not enough: the pick followed throughout
        ([3.0, 2.0, 2.5], 2.03, 0.02, 0.0, (0, 1)),  # within the trust
        ([3.0, 2.0, 2.5], 1.97, -0.02, 0.0, (1, 0)),  # leaning to the network: following wins by too little
        ([3.0, 2.0, 2.5], 1.95, -0.02, 0.0, (0, 1)),  # following wins by more than the lean
        ([2.0, 1.995, 2.5], 5.0, 0.0, 0.01, (0, 0)),  # the network's base: the pick, within the lean
        ([2.0, 1.95, 2.5], 5.0, 0.0, 0.01, (1, 0)),  # another base, better by more than the lean
        ([math.inf] * 3, 2.0, 0.0, 0.0, (0, 1)),  # the network runs away everywhere
        ([math.inf] * 3, 2.0, -0.5, 0.0, (0, 1)),
        ([math.inf, 9.0, math.inf], math.inf, 0.02, 0.0, (1, 0)),  # only the network keeps a mean
        ([math.inf, 9.0, math.inf], math.inf, -0.02, 0.0, (1, 0)),
        ([math.inf] * 3, math.inf, 0.02, 0.0, (0, 1)),  # nothing tells them apart: the pick
    ],
)
def test_the_rehearsal_trusts_the_network_only_where_it_does_better(
    network, followed, trust, lean, want
) -> None:
    selector = _rehearsing(trust=trust, lean=lean)
    selector.measure = lambda w: _measured([1.0, 2.0, 3.0])  # the base pick: first-fit (index 0)
    seen = []

    def rehearsal(workload, pick):
        seen.append(pick)
        return np.array(network), followed

    obs = _first_observation("sf-fig2", load=0.7)
    picks, modes, _ = selector.plan(obs[None], FEATURES, rehearsal)
    assert (int(picks[0]), int(modes[0])) == want
    assert seen == [0]  # the pick followed throughout is the base pick's
    with pytest.raises(ValueError, match="rehearsal: this selector rehearses the agent"):
        _rehearsing().plan(obs[None], FEATURES)


@pytest.mark.parametrize(("followed", "want"), [(2.2, (1, 0)), (1.5, (3, 1)), (math.inf, (1, 0))])
def test_a_rehearsed_fallback_is_set_against_the_networks_best_base(followed, want) -> None:
    selector = _rehearsing(trust=0.02, fallbacks=["lsf"])
    selector.measure = lambda w: _measured([1.0, 2.0, 3.0, 0.5])  # the pick: lsf (index 3)
    seen = []

    def rehearsal(workload, pick):
        seen.append(pick)
        return np.array([3.0, 2.0, 2.5]), followed  # the network with each base only

    obs = _first_observation("sf-fig2", load=0.7)
    picks, modes, _ = selector.plan(obs[None], FEATURES, rehearsal)
    assert (int(picks[0]), int(modes[0])) == want
    assert seen == [3]


def test_a_fallback_pick_is_followed_without_rehearsal_where_the_selector_says_so() -> None:
    selector = _rehearsing(trust=0.02, fallbacks=["lsf"], rehearse_fallbacks=False)
    seen = []

    def rehearsal(workload, pick):
        seen.append(pick)
        return np.array([3.0, 2.0, 2.5]), 2.2  # the network with its best base would be trusted

    obs = _first_observation("sf-fig2", load=0.7)
    selector.measure = lambda w: _measured([1.0, 2.0, 3.0, 0.5])  # the pick: lsf (index 3)
    assert [int(a[0]) for a in selector.plan(obs[None], FEATURES, rehearsal)] == [3, 1, 3]
    assert seen == []  # settled without a rehearsal
    base = _rehearsing(trust=0.02, fallbacks=["lsf"], rehearse_fallbacks=False)
    base.measure = lambda w: _measured([1.0, 2.0, 3.0, 5.0])  # a base pick: rehearsed as ever
    assert [int(a[0]) for a in base.plan(obs[None], FEATURES, rehearsal)] == [1, 0, 0]
    assert seen == [0]


def test_planning_a_new_system_is_said_on_stderr_where_it_takes_a_while(monkeypatch, capsys) -> None:
    import time

    monkeypatch.setattr("msj_gym.core.jit.ANNOUNCE_AFTER", 0.01)
    selector = _rehearsing()
    selector.measure = lambda w: _measured([1.0, 2.0, 3.0])

    def rehearsal(workload, pick):
        time.sleep(0.3)
        return np.array([3.0, 2.0, 2.5]), 2.2

    obs = _first_observation("sf-fig2", load=0.7)
    selector.plan(obs[None], FEATURES, rehearsal)
    err = capsys.readouterr().err
    said = "msj-gym: planning the agent on a system it has not seen (k = 8, 2 classes, load 0.7): "
    assert said + "rehearsing it: done in" in err
    selector.plan(obs[None], FEATURES, rehearsal)  # planned already: nothing to say
    assert capsys.readouterr().err == ""


def _assert_rehearsed_as_played(model, workload, arrivals, kwargs, network, followed) -> None:
    """A rehearsal's means are the agent's own runs through its env (every advisor in it), seeds 0
    and 1: the network with each base forced (the selection set aside), and the env's last advisor
    (the one picked) followed at every decision."""
    from msj_gym.agents.generalist import agent_means
    from msj_gym.agents.system_model import run_mean

    net = model.policy.mlp_extractor
    for b in range(len(BASES)):
        net.select_bias.zero_()
        net.select_bias[b] = 1e6
        assert network[b] == agent_means(model, [workload], [0, 1], arrivals, kwargs, flagged=False)[0]
    net.select_bias.zero_()
    own = []
    for s in (0, 1):
        run = gym.make("MSJ-v0", scenario=workload, num_arrivals=arrivals, **kwargs).unwrapped
        _, info = run.reset(seed=s)
        over = False
        while not over:
            _, _, _, over, info = run.step(len(info["action_mask"]) - 1)
        own.append(run_mean(run.result(), flagged=False))
    assert followed == np.mean(own)


def test_the_network_follows_a_fallback_throughout(tmp_path) -> None:
    """A fallback is one more advisor of the env, which the network never scores: picked, its action
    outranks every other at every decision, and the network's weights are those of the same network
    without fallbacks (a checkpoint gains fallbacks without training)."""
    pytest.importorskip("sb3_contrib", reason="the class-set policy needs the rl extra (sb3-contrib, torch)")
    import torch as th
    from gymnasium import spaces
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    plain_env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, num_arrivals=200, **KWARGS)
    plain = MaskablePPO(ClassSetMaskablePolicy, plain_env, seed=0, policy_kwargs={"hidden": 8})
    from msj_gym.agents.checkpoint import load_model, save_model

    save_model(plain, tmp_path / "plain.zip")
    kwargs = {**KWARGS, "advisor": [*BASES, "lsf"]}
    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, num_arrivals=200, **kwargs)
    config = SimulatedSelector(bases=BASES, safest=1, arrivals=1000, fallbacks=["lsf"]).config()
    model = load_model(
        tmp_path / "plain.zip",
        overrides={
            "policy_kwargs": {**plain.policy_kwargs, "simulated_selection": config},
            "action_space": spaces.Discrete(env.action_space.n),
        },
    )
    net = model.policy.mlp_extractor
    assert (net.extra, net.paired) == (4, 3)
    for key, value in plain.policy.mlp_extractor.state_dict().items():
        assert (value == net.state_dict()[key]).all(), key
    assert net.digest() == plain.policy.mlp_extractor.digest()  # what its plans on disk are keyed by
    with th.no_grad():
        plain.policy.mlp_extractor.follow_bias += 1.0
    assert net.digest() != plain.policy.mlp_extractor.digest()
    net.simulated.measure = lambda w: _measured([2.0, 2.0, 2.0, 1.0])  # lsf simulates best
    obs, _ = env.reset(seed=1)
    over, steps = False, 0
    while not over and steps < 50:
        logits = net.forward_actor(th.as_tensor(obs[None]))[0]
        assert int(logits.argmax()) == env.action_space.n - 1  # lsf's own decision
        assert (logits[-4:-1] < -1e8).all()  # no base is scored
        obs, _, _, over, _ = env.step(int(logits.argmax()))
        steps += 1
    # rehearsed with a fallback picked: the same means as the agent's own env, with every advisor, gives
    # (the rehearsal's envs ask only the advisors each run may follow)

    workload = system_from_class_set(obs, FEATURES)
    net.simulated = SimulatedSelector(**{**config, "rehearse": 300, "env_kwargs": kwargs})
    network, followed = net._rehearse(workload, 3)
    net.simulated = None
    _assert_rehearsed_as_played(model, workload, 300, kwargs, network, followed)  # lsf: the last advisor
    with pytest.raises(ValueError, match="2 fallbacks need more advisors than that in the env"):
        MaskablePPO(
            ClassSetMaskablePolicy,
            gym.make("MSJ-v0", scenario="sf-fig2", **{**KWARGS, "advisor": BASES[:2]}),
            policy_kwargs={"hidden": 8, "simulated_selection": {**config, "fallbacks": ["lsf", "msf"]}},
        )


def test_the_rehearsal_plays_the_agent_itself(tmp_path) -> None:
    """The rehearsal's runs are the network's own: each base's mean is the network's through the env,
    the base forced, the gate and selection set aside, on the selector's seeds; and the pick followed
    throughout is its advisor's action at every decision. The rehearsed plan steers the network, is
    the same for the classes in another order, and a checkpoint keeps it."""
    pytest.importorskip("sb3_contrib", reason="the class-set policy needs the rl extra (sb3-contrib, torch)")
    import torch as th
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    env = gym.make("MSJ-v0", scenario="sf-fig2", load=0.7, num_arrivals=200, **KWARGS)
    config = _rehearsing(trust=0.0).config()
    model = MaskablePPO(
        ClassSetMaskablePolicy, env, seed=3, policy_kwargs={"hidden": 8, "simulated_selection": config}
    )
    net = model.policy.mlp_extractor
    obs, _ = env.reset(seed=0)
    workload = system_from_class_set(obs, FEATURES)
    network, followed = net._rehearse(workload, 2)
    selector, net.simulated = net.simulated, None
    _assert_rehearsed_as_played(model, workload, 500, KWARGS, network, followed)  # static-quickswap: last
    net.simulated = selector
    x = th.as_tensor(obs[None])
    picks, modes, _ = net.plan(x)
    pick, mode = int(picks[0, 0]), int(modes[0, 0])
    assert mode in (0, 1)
    logits = net.forward_actor(x)[0]
    assert (logits[-len(BASES) :] > -1e8).tolist() == [j == pick for j in range(len(BASES))]
    if mode == 1:  # followed throughout: the advisor's action outranks every other
        assert int(logits.argmax()) == len(logits) - len(BASES) + pick
    shuffled = Workload(
        num_servers=workload.num_servers,
        arrival_rate=workload.arrival_rate,
        classes=list(reversed(workload.classes)),
    )
    other = _first_observation(shuffled)
    again = _rehearsing(trust=0.0)
    assert [x.tolist() for x in again.plan(other[None], FEATURES, net._rehearse)][:2] == [[pick], [mode]]
    from msj_gym.agents.checkpoint import load_model, save_model

    save_model(model, tmp_path / "m.zip")
    loaded = load_model(tmp_path / "m.zip").policy.mlp_extractor
    assert loaded.simulated is not None and loaded.simulated.config() == config


def test_a_rehearsal_with_rescue_alone_plays_the_guard_handing_over_to_the_pick() -> None:
    """With ``rescue="alone"`` the rehearsal's network runs hand a tripped guard's decisions to the
    pick, as the agent then does where it trusts the network: each base's rehearsed mean is the
    network's own run with that base and that rescue, and differs from the run rescued by the base."""
    pytest.importorskip("sb3_contrib", reason="the class-set policy needs the rl extra (sb3-contrib, torch)")
    from types import SimpleNamespace

    from sb3_contrib import MaskablePPO

    from msj_gym.agents.generalist import agent_means
    from msj_gym.agents.set_policy import ClassSetMaskablePolicy
    from msj_gym.env.observe import squash

    env = gym.make("MSJ-v0", scenario="four-class", load=0.9, num_arrivals=200, **KWARGS)
    config = _rehearsing(trust=0.0, rescue="alone").config()
    model = MaskablePPO(
        ClassSetMaskablePolicy, env, seed=3, policy_kwargs={"hidden": 8, "simulated_selection": config}
    )
    net = model.policy.mlp_extractor
    net.follow_when_age.fill_(squash.py_func(0.5))  # a guard that trips often
    workload = system_from_class_set(env.reset(seed=0)[0], FEATURES)
    pick = 2
    network, _ = net._rehearse(workload, pick)
    selector = net.simulated
    differs = False
    for b in range(len(BASES)):
        for rescue in (pick, b) if b == 0 else (pick,):

            def plan(batch, *args, b=b, rescue=rescue):
                n = len(batch)
                return np.full(n, b), np.zeros(n, dtype=np.int64), np.full(n, rescue)

            net.simulated = SimpleNamespace(rescue="alone", rehearse=0, plan=plan)
            played = agent_means(model, [workload], [0, 1], 500, KWARGS, flagged=False)[0]
            if rescue == pick:
                assert network[b] == played
            else:
                differs |= bool(network[b] != played)
    net.simulated = selector
    assert differs  # the rescue changed some run: the guard tripped and handed over
