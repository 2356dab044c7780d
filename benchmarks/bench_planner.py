"""Speed of the decision-time planner: planned decisions per second at its default budget, and the
time per decision against its network's alone in the same run (a ratio: this machine is shared and
noisy).

    python benchmarks/bench_planner.py [--agent planner | --base first-fit] [--scenario sf-fig2]
        [--load 0.7] [--decisions N] [--repeats R]

It drives one episode with the planner (``--agent``: a planner checkpoint; default the shipped
``planner``, else a network of random weights under the default settings) until ``--decisions``
decisions with a choice have been planned, and times them; then the network alone on the same
decisions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import gymnasium as gym
import numpy as np


def _planner(spec: str | None, env: gym.Env, base: str | None) -> object:
    from msj_gym.agents.network import NetworkWeights
    from msj_gym.agents.planner import Planner, PlannerConfig
    from msj_gym.experiments.agents import load_agent, shipped_agents

    if base is not None:  # the default budget, a heuristic playing the branches out
        config = PlannerConfig(network=False, bases=(base,))
        return Planner(env, config, NetworkWeights.initial(seed=0), seed=0)
    if spec is None and "planner" not in shipped_agents():
        return Planner(env, PlannerConfig(), NetworkWeights.initial(seed=0), seed=0)
    return load_agent(spec or "planner").agent_for(env, seed=0)


def main(argv: list[str] | None = None) -> None:
    import msj_gym  # noqa: F401  (registers the envs)
    from msj_gym.agents.network import ENV_KWARGS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", default=None, help="a planner checkpoint (default: the shipped planner)")
    ap.add_argument(
        "--base", default=None, help="plan with this heuristic as the only base instead (e.g. first-fit)"
    )
    ap.add_argument("--scenario", default="sf-fig2")
    ap.add_argument("--load", type=float, default=0.7)
    ap.add_argument("--decisions", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    env = gym.make("MSJ-v0", scenario=args.scenario, load=args.load, num_arrivals=10**6, **ENV_KWARGS)
    planner = _planner(args.agent, env, args.base)
    # with a heuristic base the network plays no part: no ratio to it
    network = None if args.base else planner.network  # type: ignore[attr-defined]
    obs, info = env.reset(seed=1)
    planner.predict(obs, action_masks=info["action_mask"])  # compile (or load from the cache) first
    per_planned, ratios = [], []
    for r in range(args.repeats):
        states, planned, t_plan = [], 0, 0.0
        while planned < args.decisions:
            mask = info["action_mask"]
            if np.count_nonzero(mask) >= 2:
                planned += 1
                states.append((obs, mask))
            t0 = time.perf_counter()
            action, _ = planner.predict(obs, action_masks=mask)  # type: ignore[attr-defined]
            t_plan += time.perf_counter() - t0
            obs, _, _, over, info = env.step(int(action))
            if over:
                obs, info = env.reset(seed=2 + r)
        t0 = time.perf_counter()
        for o, m in states:
            network.predict(o, action_masks=m) if network is not None else None
        t_net = time.perf_counter() - t0
        per_planned.append(t_plan / planned)
        ratios.append(t_plan / max(t_net, 1e-9))
        versus = "" if network is None else f", {ratios[-1]:.0f}x the network alone"
        print(
            f"repeat {r + 1}: {planned / t_plan:.0f} planned decisions/s "
            f"({1e3 * t_plan / planned:.2f} ms each){versus}",
            flush=True,
        )
    ms = 1e3 * statistics.median(per_planned)
    versus = "" if network is None else f", {statistics.median(ratios):.0f}x the network"
    print(f"median: {ms:.2f} ms per planned decision ({1e3 / ms:.0f}/s){versus}")


if __name__ == "__main__":
    main(sys.argv[1:])
