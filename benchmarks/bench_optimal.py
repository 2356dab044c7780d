"""Speed of the exact optimal-policy solver (``msj_gym.analysis.optimal.solve_optimal``): wall time,
states per second, policy iterations and peak memory of whole solves, and, on the smaller case, one
policy evaluation on the post-decision states the policy takes (the solver's method) against one
LU factorisation of the chain of all pre-decision states (the method it replaced), on the same
policy in the same run (a ratio: this machine is shared and noisy). Both must give the same gain.

    python benchmarks/bench_optimal.py [--scenario S] [--load L] [--small-load L] [--check] [--skip-large]

By default: one-or-all at lambda = 7 (load 0.896875, 3.5 M states at its final buffers; the
leaderboard's settings, without the check at 25 % larger buffers unless ``--check``), and one-or-all
at lambda = 6 (load 0.76875) as the smaller case.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from msj_gym.analysis import optimal as opt
from msj_gym.workloads.scenarios import load_scenario


def _solve(scenario: str, load: float, check: bool, max_states: int) -> opt.OptimalSolution:
    workload = load_scenario(scenario).build(load=load)
    t0 = time.perf_counter()
    sol = opt.solve_optimal(workload, check_buffers=check, max_states=max_states)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(
        f"{scenario} at load {load:g}: mean response time {sol.mean_response_time:.8f}, "
        f"{sol.value.states} states (buffers {list(sol.value.buffers)}), {sol.iterations} policy "
        f"iterations, {wall:.1f} s ({sol.value.states / wall:,.0f} states/s of the final chain), "
        f"peak memory so far {peak:.2f} GiB" + (f", check {sol.buffer_check}" if check else "")
    )
    return sol


def _full_chain_gain(chain: opt.MSJChain, post: np.ndarray, cost: np.ndarray) -> float:
    """The gain from one LU factorisation of ``I - P`` over every pre-decision state."""
    import scipy.sparse.linalg as spla

    P = opt._policy_matrix(chain, chain.transitions(), post)
    lu = spla.splu(opt._matrix(chain.num_pre, P))
    return float(lu.solve(np.ascontiguousarray(cost.ravel()[post]))[0])


def _evaluation_ratio(sol: opt.OptimalSolution, repeats: int) -> None:
    chain = sol.chain
    post = opt._from_steps(chain, sol.table).post
    cost = np.broadcast_to(chain.jobs()[None], chain.valid.shape) / chain.uniformization
    trans = chain.transitions()
    for r in range(repeats):
        t0 = time.perf_counter()
        ev = opt._evaluate(chain, trans, post, cost)
        t_new = time.perf_counter() - t0
        t0 = time.perf_counter()
        g_full = _full_chain_gain(chain, post, cost)
        t_old = time.perf_counter() - t0
        if abs(ev.gain - g_full) > 1e-10 * abs(g_full):
            raise AssertionError(f"gain {ev.gain!r} against the full chain's {g_full!r}")
        print(
            f"repeat {r + 1}: one evaluation of the solved policy ({chain.num_pre} states): "
            f"{len(ev.reduced.used)} post-decision states {t_new:.2f} s, all pre-decision states "
            f"{t_old:.2f} s ({t_old / t_new:.1f}x), mean jobs {ev.gain * chain.uniformization:.10f}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="one-or-all")
    ap.add_argument("--load", type=float, default=0.896875)
    ap.add_argument("--small-load", type=float, default=0.76875)
    ap.add_argument("--check", action="store_true", help="also solve at 25 %% larger buffers")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--max-states", type=int, default=6_000_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    small = _solve(args.scenario, args.small_load, args.check, args.max_states)
    _evaluation_ratio(small, args.repeats)
    if not args.skip_large:
        _solve(args.scenario, args.load, args.check, args.max_states)


if __name__ == "__main__":
    main()
