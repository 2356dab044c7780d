"""Branches played out in sampled futures: what they cost is the engine's own play-out in that future,
and a size-oblivious player reads neither the episode's future arrivals nor the sizes of its jobs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import msj_gym  # noqa: F401  (registers the envs)
from msj_gym.core import state as S
from msj_gym.env import planning
from msj_gym.env.futures import FuturePlayer
from msj_gym.workloads import Exponential, JobClass, Workload
from msj_gym.workloads.distributions import Deterministic, HyperExponential, Pareto, Uniform


def _env(load: float = 0.8, seed: int = 3, steps: int = 300, scenario: str = "sf-fig2") -> gym.Env:
    """An MSJ-v0 episode, ``steps`` decisions into it under First-Fit, at a decision with a choice."""
    env = gym.make("MSJ-v0", scenario=scenario, load=load, num_arrivals=5000).unwrapped
    env.reset(seed=seed)
    for _ in range(steps):
        planning.step_policy(env, "first-fit")
    while np.count_nonzero(env.action_masks()) < 2:
        planning.step_policy(env, "first-fit")
    return env


def _hide(env: gym.Env, rng: np.random.Generator) -> None:
    """Change what a scheduler cannot know: the future arrivals in the ring and the jobs' sizes."""
    sim = env.core.sim
    narr, ngen = int(sim.iv[S.I_NARR]), int(sim.iv[S.I_NGEN])
    mask = sim.ring_t.size - 1
    idx = np.arange(narr, ngen) & mask
    sim.ring_s[idx] = rng.exponential(5.0, idx.size)
    sim.ring_c[idx] = rng.integers(0, env.workload.num_classes, idx.size)
    sim.ring_t[idx] = np.sort(sim.ring_t[idx] + rng.random(idx.size))
    live = sim.ji[:, S.STATE] != S.FREE_SLOT
    sim.js[live, S.REMAINING] += rng.exponential(3.0, int(live.sum()))
    sim.js[live, S.SERVICE] += 1.0


def test_a_size_oblivious_player_reads_neither_the_future_nor_the_sizes() -> None:
    env = _env()
    valid = np.flatnonzero(env.action_masks())
    first = FuturePlayer(env, ["first-fit", "msf"], futures=4, horizon=32, seed=11).costs(valid)
    _hide(env, np.random.default_rng(0))
    again = FuturePlayer(env, ["first-fit", "msf"], futures=4, horizon=32, seed=11).costs(valid)
    assert first is not None and again is not None
    assert np.array_equal(first, again)  # bit for bit
    # the check can fail: a size-aware player reads the sizes, and its costs move with them
    sized = FuturePlayer(env, ["first-fit"], futures=4, horizon=32, seed=11, know_sizes=True)
    before = sized.costs(valid)
    _hide(env, np.random.default_rng(1))
    after = FuturePlayer(env, ["first-fit"], futures=4, horizon=32, seed=11, know_sizes=True).costs(valid)
    assert not np.array_equal(before, after)


@pytest.mark.parametrize("persist", [1, 3, 12])
def test_a_branch_costs_what_the_engine_pays_in_that_future(persist: int) -> None:
    """In the episode's own future (its next arrivals, its jobs' real sizes), "wait" (held for
    ``persist`` decision epochs) then the base costs what the env's waits, then the base's native
    play-out, pay until those jobs have left."""
    env = _env(load=0.7, steps=200)
    sim = env.core.sim
    horizon = 40
    narr = int(sim.iv[S.I_NARR])
    while int(sim.iv[S.I_NGEN]) < narr + horizon:  # the real future, fed as the env would
        env.core.handle(S.ST_NEED_ARRIVALS)
        sim = env.core.sim
    mask = sim.ring_t.size - 1
    idx = np.arange(narr, narr + horizon) & mask
    player = FuturePlayer(env, ["first-fit"], futures=1, horizon=horizon, know_sizes=True, persist=persist)
    present = player.present_jobs()
    costs = player.costs_in(
        np.array([0]),
        sim.ring_t[idx][None, :],
        sim.ring_c[idx][None, :],
        sim.ring_s[idx][None, :],
        np.full((1, present.size), -1.0),
    )
    assert costs is not None and player.last_status.max() == 0
    # the same through the env: the stream cut after those arrivals, every job counted until it leaves
    sim.iv[S.I_NGEN] = narr + horizon
    sim.iv[S.I_EXHAUSTED] = 1
    sim.iv[S.I_MEAS_LO] = 0
    sim.iv[S.I_MEAS_HI] = narr + horizon
    sim.iv[S.I_MEAS_DONE] = narr - int(sim.iv[S.I_NSYS])
    start = float(sim.fv[S.F_RUN_AREA])
    # the hold: at the next epochs nothing starts but the widest class waiting now, once it fits
    ci = env.core.sim.ci
    waiting = np.flatnonzero(ci[S.C_NWAIT] > 0)
    widest = int(waiting[np.argmax(ci[S.C_NEED, waiting])])
    if ci[S.C_NEED, widest] <= env.core.sim.iv[S.I_FREE]:
        widest = -1  # it fits already: the wait only waits
    paid, over, taken = 0.0, False, 1
    _, reward, _, over, info = env.step(0)
    paid -= reward
    while taken < persist and not over:
        taken += 1
        if widest < 0 or not info["action_mask"][1 + widest]:
            _, reward, _, over, info = env.step(0)
            paid -= reward
            continue
        now = info["time"]  # its jobs start as they fit at this epoch; the base decides the rest
        while not over and info["time"] == now and info["action_mask"][1 + widest]:
            _, reward, _, over, info = env.step(1 + widest)
            paid -= reward
        break
    paid += 0.0 if over else -planning.play_out(env, "first-fit")
    assert float(env.core.sim.fv[S.F_RUN_AREA]) - start == pytest.approx(paid)
    assert costs[0, 0, 0] == pytest.approx(paid, rel=1e-12)


def test_the_futures_follow_the_seed_and_differ_between_decisions() -> None:
    env = _env()
    valid = np.flatnonzero(env.action_masks())
    a = FuturePlayer(env, ["msf"], futures=3, horizon=16, seed=5)
    b = FuturePlayer(env, ["msf"], futures=3, horizon=16, seed=5)
    one, two = a.costs(valid), b.costs(valid)
    assert np.array_equal(one, two)
    assert not np.array_equal(a.costs(valid), one)  # the next decision draws new futures


def test_refusals_are_one_line() -> None:
    env = gym.make("MSJ-v0", actions="priority").unwrapped
    with pytest.raises(ValueError, match="job actions"):
        FuturePlayer(env, ["msf"])
    env = gym.make("MSJ-v0").unwrapped
    with pytest.raises(ValueError, match="futures: expected an integer >= 1, got 0"):
        FuturePlayer(env, ["msf"], futures=0)
    with pytest.raises(ValueError, match="reads job sizes"):
        FuturePlayer(env, ["easy-backfilling"])
    with pytest.raises(ValueError, match="bases: expected at least one"):
        FuturePlayer(env, [])
    with pytest.raises(RuntimeError, match="reset"):
        FuturePlayer(env, ["msf"]).costs(np.array([0]))


@pytest.mark.parametrize(
    "dist",
    [
        Exponential(1.0),
        Deterministic(2.0),
        Uniform(1.0, 3.0),
        HyperExponential(mean=1.0, scv=8.0),
        Pareto(2.5, mean=1.0),
    ],
    ids=lambda d: type(d).__name__,
)
def test_residual_draws_follow_the_conditional_law(dist) -> None:
    """D - a given D > a: the mean of the residual draws against the same from plain draws, within a
    few standard errors (a fixed seed)."""
    rng = np.random.default_rng(4)
    age = 1.5
    r = dist.sample_residual(rng, np.full(100_000, age))
    x = dist.sample(rng, 2_000_000)
    ref = x[x > age] - age
    assert (r >= 0).all()
    se = np.hypot(r.std() / np.sqrt(r.size), ref.std() / np.sqrt(ref.size)) + 1e-12
    assert abs(r.mean() - ref.mean()) < 5 * se


def test_the_generic_residual_is_rejection_from_the_law() -> None:
    """A distribution without a conditional law of its own (Erlang) gets the base class's rejection."""
    from msj_gym.workloads.distributions import Erlang

    wl = Workload(4, [JobClass(1, Erlang(3, 1.0), 1.0)], load=0.5)
    rng = np.random.default_rng(0)
    r = wl.classes[0].service_time.sample_residual(rng, np.full(50_000, 1.0))
    x = wl.classes[0].service_time.sample(rng, 1_000_000)
    ref = x[x > 1.0] - 1.0
    assert abs(r.mean() - ref.mean()) < 0.02


def test_with_hold_a_start_is_followed_by_the_base_and_a_wait_holds_until_the_wide_class_fits() -> None:
    """``hold``: a start's branch is the start and then the base (as with ``persist`` 1: the branch of
    the base's own action is the base, so a one-step planner is never worse than its base for want
    of it); a wait holds the servers for the widest class waiting until its jobs fit, however long
    that takes (as a ``persist`` without end), and where nothing is held it is a plain wait."""
    env = _env(load=0.9, steps=400)
    seen = set()
    for _ in range(4000):
        mask = env.action_masks()
        valid = np.flatnonzero(mask)
        ci, free = env.core.sim.ci, int(env.core.sim.iv[S.I_FREE])
        waiting = np.flatnonzero(ci[S.C_NWAIT] > 0)
        held = waiting.size > 0 and ci[S.C_NEED, waiting].max() > free
        if mask[0] and valid.size >= 2 and held not in seen:
            seen.add(held)
            kw = {"futures": 5, "horizon": 24, "seed": 9}
            plain = FuturePlayer(env, ["first-fit"], **kw).costs(valid)
            endless = FuturePlayer(env, ["first-fit"], persist=10**9, **kw).costs(valid)
            hold = FuturePlayer(env, ["first-fit"], hold=True, **kw).costs(valid)
            assert np.array_equal(hold[..., 1:], plain[..., 1:])
            assert np.array_equal(hold[..., 0], (endless if held else plain)[..., 0])
            assert not np.array_equal(plain[..., 1:], endless[..., 1:])  # a persistent start is no base
        if len(seen) == 2:
            break
        planning.step_policy(env, "first-fit")
    assert seen == {True, False}
