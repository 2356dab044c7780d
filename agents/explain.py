"""Set an agent's decisions beside the exact optimal policy's, state by state, on a system where the
optimum is solvable: what the agent learned, and where it parts from the optimum.

    python -m msj_gym.agents.explain generalist --scenario sf-fig2 --loads 0.5,0.7,0.9
    python -m msj_gym.agents.explain generalist --scenario one-or-all --loads 0.5,0.7 --arrivals 20000

The agent runs through its env on the point's workload; at each of its decisions the non-preemptive
optimum (``mdp-optimal``, the Markov decision process over class counts, solved or loaded from the
cache) is asked what it would do in the same state, without acting. Each decision is reduced to what
it starts: nothing (the servers are held idle although a waiting job fits), jobs of the narrower class
only, or a job of the wider class. The tables count, per running configuration and queue, how often
each one chose what (two-class systems). The agent's own actions are its whole decisions (priority
actions and advisors' decisions start several jobs at once), read off the state before and after.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

KINDS = ("idle", "narrow", "wide")


def _kind(started: np.ndarray, wide: int) -> str:
    """What a decision starts: nothing, narrow jobs only, or a wide one (``started``: per class)."""
    if started[wide] > 0:
        return "wide"
    return "narrow" if started.sum() > 0 else "idle"


def compare(spec: str, scenario: str, load: float, arrivals: int, seed: int) -> dict[str, Any]:
    """Decisions of the agent ``spec`` and of the optimum on one episode: a counter of (state group,
    agent's kind, optimum's kind) and the agreement."""
    from msj_gym.env import planning, view
    from msj_gym.experiments.agents import load_agent
    from msj_gym.registry import policy_from_spec

    loaded = load_agent(spec)
    if loaded.env_id_for("msj") not in ("MSJ-v0", "MSJPreemptive-v0"):
        raise ValueError(
            f"agent {spec!r}: acts in {loaded.env_id}; the optimum's decisions are an MSJ queue's "
            "(MSJ-v0, MSJPreemptive-v0)"
        )
    env = loaded.make_env(scenario, {"load": load}, arrivals, arrivals // 10)
    base = env.unwrapped
    if base.workload.num_classes != 2:
        raise ValueError(f"--scenario {scenario!r}: the tables are drawn for two classes")
    agent = loaded.agent_for(env, seed)
    optimum = policy_from_spec("mdp-optimal", "optimum")
    needs = np.asarray(base.workload.server_needs)
    wide = int(np.argmax(needs))
    obs, info = env.reset(seed=seed)
    counts: Counter[tuple[str, str, str]] = Counter()
    over = False
    while not over:
        # the optimum's data kept per episode, as a driver of its own kept it
        started_opt = view.starts_by_class_of(base, planning.decision_now(base, optimum))
        waiting, running = view.jobs_by_class(base)
        group = (
            f"{int(running[1 - wide])} narrow running, "
            f"{'a wide job waits' if waiting[wide] else 'no wide job waits'}"
        )
        action, _ = agent.predict(obs, deterministic=True, action_masks=info["action_mask"])
        started_agent = planning.starts_by_class(base, int(action))
        obs, _, _, over, info = env.step(int(action))
        counts[(group, _kind(started_agent, wide), _kind(started_opt, wide))] += 1
    total = sum(counts.values())
    agree = sum(n for (_, a, o), n in counts.items() if a == o)
    return {"counts": counts, "decisions": total, "agreement": agree / total if total else float("nan")}


def table(result: dict[str, Any]) -> str:
    """A Markdown table: per state group, the decisions and how often agent and optimum chose each."""
    groups: dict[str, Counter[tuple[str, str]]] = {}
    for (group, a, o), n in result["counts"].items():
        groups.setdefault(group, Counter())[(a, o)] += n
    lines = [
        "| state | decisions | agent: idle / narrow / wide | optimum: idle / narrow / wide | agree |",
        "|---|---:|---|---|---:|",
    ]
    for group in sorted(groups, key=lambda g: (int(g.split()[0]), g)):
        c = groups[group]
        n = sum(c.values())
        if n < 20:
            continue
        agent = [sum(v for (a, _), v in c.items() if a == k) / n for k in KINDS]
        opt = [sum(v for (_, o), v in c.items() if o == k) / n for k in KINDS]
        agree = sum(v for (a, o), v in c.items() if a == o) / n
        lines.append(
            f"| {group} | {n} | {' / '.join(f'{x:.2f}' for x in agent)} | "
            f"{' / '.join(f'{x:.2f}' for x in opt)} | {agree:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    from ._cli import ArgumentParser

    ap = ArgumentParser(prog="python -m msj_gym.agents.explain", description=__doc__.split("\n\n")[0])
    ap.add_argument("agent", help="a shipped agent's name, a checkpoint .zip or module:attr")
    ap.add_argument("--scenario", default="sf-fig2", help="a two-class system whose optimum is solvable")
    ap.add_argument("--loads", default="0.5,0.7,0.9", help="comma-separated loads, one run each")
    ap.add_argument("--arrivals", type=int, default=10_000, help="arrivals per run")
    ap.add_argument("--seed", type=int, default=5000, help="the seed of every run")
    args = ap.parse_args(argv)
    try:
        loads = [float(x) for x in args.loads.split(",")]
    except ValueError:
        ap.error(f"--loads: expected comma-separated numbers, got {args.loads!r}")
    if args.arrivals < 100:
        ap.error(f"--arrivals: expected at least 100, got {args.arrivals}")
    for load in loads:
        result = compare(args.agent, args.scenario, load, args.arrivals, args.seed)
        print(
            f"\n{args.scenario} at load {load:g}: {result['decisions']} decisions, the agent makes the "
            f"optimum's choice at {100 * result['agreement']:.1f} % of them\n"
        )
        print(table(result), flush=True)


if __name__ == "__main__":
    from ._cli import run_script

    raise SystemExit(run_script("python -m msj_gym.agents.explain", main))
