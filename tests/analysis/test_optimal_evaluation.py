"""The policy evaluation of the exact solver (the chain on the post-decision states a policy takes,
factorised in a nested-dissection order) against one LU factorisation of the chain of all pre-decision
states, the method it replaced."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from msj_gym import load_scenario
from msj_gym.analysis import optimal as opt
from msj_gym.workloads import Workload
from tests.analysis.test_optimal import _workload


def _chain(wl: Workload, buffers: list[int], preemptive: bool) -> opt.MSJChain:
    needs, k, lam, mu = opt._parameters(wl)
    return opt.MSJChain.build(needs, k, lam, mu, buffers, preemptive)


def _full_lu(chain: opt.MSJChain, post: np.ndarray, cost_dense: np.ndarray) -> dict[str, object]:
    """Gain, relative values and per-class marginals from one LU of ``I - P`` over every pre-decision
    state (the evaluation the solver used before)."""
    P = opt._policy_matrix(chain, chain.transitions(), post)
    lu = spla.splu(opt._matrix(chain.num_pre, P))
    z = lu.solve(np.ascontiguousarray(cost_dense.ravel()[post]))
    g = float(z[0])
    z[0] = 0.0
    e0 = np.zeros(chain.num_pre)
    e0[0] = 1.0
    pi = np.maximum(lu.solve(e0, trans="T"), 0.0)
    pi /= pi.sum()
    t = opt._counts(chain, post)  # a decision keeps the counts: those of the post-decision state
    marginals = [np.bincount(t[c], weights=pi, minlength=b + 1) for c, b in enumerate(chain.buffers)]
    return {"gain": g, "h": z, "marginals": marginals}


def _policies(chain: opt.MSJChain, rng: np.random.Generator) -> list[opt._Policy]:
    """Most and Least Servers First, and greedy policies of random post-decision values (states that
    could not empty served as Most Servers First, as policy iteration does)."""
    trans = chain.transitions()
    msf = opt._heuristic_policy(chain, -1)
    out = [msf, opt._heuristic_policy(chain, +1)]
    for _ in range(3):
        W = np.where(chain.valid, rng.random(chain.valid.shape), np.inf)
        pol = opt._greedy(chain, W)
        stuck = opt._cannot_empty(opt._reduce(chain, trans, pol.post))
        out.append(opt._Policy(post=np.where(stuck, msf.post, pol.post), table=pol.table))
    return out


CASES = [
    # (workload, buffers): one-or-all with k = 4, sf-fig2's two classes with k = 4, three classes
    (_workload(4, 1.4, [(1, 0.9, 1.0), (4, 0.1, 1.0)]), [14, 6]),
    (_workload(4, 1.1, [(1, 0.8, 1.0), (4, 0.2, 2.0)]), [12, 7]),
    (_workload(6, 1.6, [(1, 0.5, 1.0), (2, 0.3, 1.5), (3, 0.2, 0.8)]), [7, 5, 4]),
]


@pytest.mark.parametrize("preemptive", [False, True])
@pytest.mark.parametrize(("wl", "buffers"), CASES)
def test_reduced_evaluation_equals_the_full_chain_lu(
    wl: Workload, buffers: list[int], preemptive: bool
) -> None:
    chain = _chain(wl, buffers, preemptive)
    trans = chain.transitions()
    rng = np.random.default_rng(7)
    # a cost that is not the number of jobs: the reduction must not lean on the cost's form
    cost_dense = np.where(chain.valid, rng.random(chain.grid)[None], 0.0)
    for pol in _policies(chain, rng):
        ref = _full_lu(chain, pol.post, cost_dense)
        ev = opt._evaluate(chain, trans, pol.post, cost_dense, stationary=True)
        assert len(ev.reduced.used) <= chain.num_pre
        assert ev.gain == pytest.approx(ref["gain"], rel=1e-11)
        scale = max(1.0, float(np.abs(ref["h"]).max()))
        assert np.abs(ev.h - ref["h"]).max() <= 1e-9 * scale
        for mine, theirs in zip(opt._marginals(chain, ev), ref["marginals"], strict=True):
            assert np.abs(mine - theirs).max() <= 1e-11
        # the values solve the Poisson equation of the whole chain; a wrong one is refused
        W = opt._post_values(chain, trans, ev.h, cost_dense)
        opt._check_residual(ev.gain, ev.h, W, pol.post)
        with pytest.raises(RuntimeError, match="residual"):
            opt._check_residual(ev.gain * (1 + 1e-6) + 1e-6, ev.h, W, pol.post)


def test_a_policy_that_fills_the_servers_takes_few_post_decision_states() -> None:
    # one-or-all: Most Servers First takes every running configuration at a point to one or two
    chain = _chain(_workload(8, 2.0, [(1, 0.9, 1.0), (8, 0.1, 1.0)]), [40, 12], preemptive=False)
    red = opt._reduce(chain, chain.transitions(), opt._heuristic_policy(chain, -1).post)
    assert len(red.used) < chain.num_pre / 3


@pytest.mark.parametrize("preemptive", [False, True])
def test_the_solved_value_is_that_of_the_full_chain(preemptive: bool) -> None:
    wl = load_scenario("sf-fig2").build(load=0.5)
    sol = opt.solve_optimal(wl, preemptive=preemptive, buffers=[24, 14], check_buffers=False)
    chain = sol.chain
    post = opt._from_steps(chain, sol.table).post if not preemptive else _preemptive_post(chain, sol.table)
    ref = _full_lu(chain, post, np.broadcast_to(chain.jobs()[None], chain.valid.shape))
    jobs = sum(float(m @ np.arange(len(m))) for m in ref["marginals"])
    lam = np.asarray(chain.arrival_rates)
    blocked = np.array([m[-1] for m in ref["marginals"]])
    assert sol.value.mean_jobs == pytest.approx(jobs, rel=1e-10)
    assert sol.mean_response_time == pytest.approx(jobs / float(lam @ (1 - blocked)), rel=1e-10)
    assert sol.value.mean_jobs == pytest.approx(ref["gain"], rel=1e-10)  # the cost per step: jobs


def _preemptive_post(chain: opt.MSJChain, table: np.ndarray) -> np.ndarray:
    gsize = math.prod(chain.grid)
    return table.ravel() * gsize + np.arange(gsize)


def test_the_dissection_order_is_a_permutation() -> None:
    rng = np.random.default_rng(3)
    t = [rng.integers(0, 30, size=5000), rng.integers(0, 12, size=5000), rng.integers(0, 3, size=5000)]
    order = opt._dissection_order(t, leaf=16)
    assert np.array_equal(np.sort(order), np.arange(5000))
    # states at a single point cannot be separated: they stay one block
    assert np.array_equal(np.sort(opt._dissection_order([np.zeros(100, dtype=np.int64)])), np.arange(100))
