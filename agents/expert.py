"""Expert iteration: learn the class-set network (:mod:`msj_gym.agents.network`) from the decisions of
a planner that plays actions out in sampled futures, over a distribution of systems; then make the
network the planner's base and repeat.

    python -m msj_gym.agents.expert --systems 64 --decisions 40000 --rounds 3 --workers 2 \\
        --out generalist.npz

Each round (Anthony et al., "Thinking Fast and Slow with Deep Learning and Tree Search", NeurIPS 2017;
Bertsekas, rollout algorithms):

1. **Collect.** On training systems drawn from :mod:`msj_gym.workloads.generator` (seed ``--seed``,
   never a point of the benchmark suite), run episodes: round 1 under the heuristic bases, each episode
   under one of them; later rounds under the network of the round before (the states it reaches,
   DAgger). ``--explore`` of the decisions are random valid actions. At sampled decisions every valid
   action is played out by :class:`~msj_gym.env.futures.FuturePlayer` in ``--futures`` futures of
   ``--horizon`` arrivals drawn from the system's model (never the episode's own future): in round 1
   by each heuristic base, an action costing its mean over the futures under the base that does best
   with it (a parallel rollout, Chang, Givan & Chong 2004); from round 2 by the network itself (a step
   of policy iteration).
2. **Fit.** The network minimises the expected cost of its action distribution, ``sum_a pi(a|s) (C_a -
   mean C) / scale`` (``scale``: the system's spread of costs, so that every system counts alike), with
   a small entropy bonus, a cost-sensitive classification whose minimiser takes the cheapest action.
   A round fits its own decisions, starting from the last round's weights.
3. **Select.** Each round's fit drives the next round and plays its branches out (a step of policy
   iteration: a one-step improvement leans on its bases to do what it never does itself, such as
   holding servers for a wide job, and the next round, whose base is the fit, sees what that costs).
   The network written is the round's fit with the lowest mean log ratio to the best heuristic on
   ``--select-systems`` other generated systems (the networks run natively there, as in the
   leaderboard).

The exact optimum is never a target: the planner learns from simulations of the system's model only.
The result is a weights file (``.npz``, data only) with its ``.json`` config, an agent as
``msj-gym leaderboard --agent FILE.npz`` runs it (:func:`load_checkpoint`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

PROG = "python -m msj_gym.agents.expert"
HEURISTICS = ("first-fit", "msf", "adaptive-quickswap", "static-quickswap")
# what a round's compared decisions depend on, besides the network that drove them
_COLLECTION = ("systems", "scenario", "seed", "decisions", "bases", "futures", "horizon", "persist",
               "episode_arrivals", "skip", "sample_every", "explore")  # fmt: skip
UNSTABLE_RATIO = 10.0  # what an unstable selection run counts as, in multiples of the best heuristic


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from msj_gym.agents._cli import ArgumentParser

    ap = ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--systems", type=int, default=64, help="training systems drawn from the generator")
    ap.add_argument(
        "--scenario",
        action="append",
        default=None,
        help="train on this scenario (a name or file, at its load) instead of generated ones; repeatable",
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the training systems, episodes and fits")
    ap.add_argument("--rounds", type=int, default=3, help="collect-and-fit rounds")
    ap.add_argument("--decisions", type=int, default=40_000, help="compared decisions per round")
    ap.add_argument("--bases", default=",".join(HEURISTICS), help="heuristic bases of the play-outs")
    ap.add_argument("--futures", type=int, default=2, help="sampled futures per compared decision")
    ap.add_argument("--horizon", type=int, default=400, help="sampled arrivals per future")
    ap.add_argument(
        "--persist", type=int, default=8, help="decision epochs a compared action is held for, at most"
    )
    ap.add_argument("--episode-arrivals", type=int, default=3000, help="arrivals per collection episode")
    ap.add_argument("--skip", type=int, default=300, help="arrivals before the first compared decision")
    ap.add_argument("--sample-every", type=float, default=6.0, help="mean decisions between two compared")
    ap.add_argument("--explore", type=float, default=0.1, help="share of decisions taken at random")
    ap.add_argument("--hidden", type=int, default=32, help="width of the network's hidden layers")
    ap.add_argument("--code", type=int, default=16, help="width of a class's code")
    ap.add_argument("--epochs", type=int, default=30, help="passes over the decisions per fit")
    ap.add_argument("--learning-rate", type=float, default=3e-3, help="Adam's step size")
    ap.add_argument("--entropy", type=float, default=0.01, help="entropy bonus of the expected-cost loss")
    ap.add_argument("--select-systems", type=int, default=16, help="generated systems that select a fit")
    ap.add_argument("--select-arrivals", type=int, default=5000, help="arrivals per selection run")
    ap.add_argument("--workers", type=int, default=1, help="processes collecting and evaluating")
    ap.add_argument("--backend", choices=("local", "ray"), default="local", help="where the workers run")
    ap.add_argument("--address", default=None, help="a Ray cluster's address (--backend ray)")
    ap.add_argument(
        "--data", type=Path, default=None, help="keep each round's decisions here (.npz), to resume"
    )
    ap.add_argument("--out", type=Path, required=True, help="the network's weights (.npz; a .json beside it)")
    args = ap.parse_args(argv)
    _check(args)
    return args


def _check(args: argparse.Namespace) -> None:
    from msj_gym.agents._cli import check_count, check_number, check_output
    from msj_gym.registry import policy_from_spec

    check_count("--systems", args.systems, 1, 100_000)
    check_count("--rounds", args.rounds, 1, 100)
    check_count("--decisions", args.decisions, 10, 10**8)
    check_count("--futures", args.futures, 1, 1024)
    check_count("--horizon", args.horizon, 1, 100_000)
    check_count("--persist", args.persist, 1, 100_000)
    check_count("--episode-arrivals", args.episode_arrivals, 100, 10**7)
    check_count("--skip", args.skip, 0, args.episode_arrivals - 1)
    check_number("--sample-every", args.sample_every, 1.0, 1e6)
    check_number("--explore", args.explore, 0.0, 1.0)
    check_count("--hidden", args.hidden, 1, 4096)
    check_count("--code", args.code, 1, 4096)
    check_count("--epochs", args.epochs, 1, 100_000)
    check_number("--learning-rate", args.learning_rate, 0.0, 1.0, open_lo=True)
    check_number("--entropy", args.entropy, 0.0, 100.0)
    check_count("--select-systems", args.select_systems, 1, 100_000)
    check_count("--select-arrivals", args.select_arrivals, 100, 10**7)
    from msj_gym.experiments.runner import check_backend

    check_count("--workers", args.workers, 1, 256)
    check_backend(args.backend, args.workers, args.address)
    check_count("--seed", args.seed, 0, 2**63 - 1)
    bases = [b for b in args.bases.split(",") if b]
    if not bases:
        raise ValueError(f"--bases {args.bases!r}: expected one policy id or more")
    for b in bases:
        policy = policy_from_spec(b, "--bases")
        if policy.preemptive or policy.size_aware or type(policy).kernel is None:
            raise ValueError(
                f"--bases {b!r}: a base is a non-preemptive, size-oblivious policy with a compiled kernel"
            )
    args.base_list = bases
    check_output("--out", args.out, ".npz")
    check_output("--data", args.data, ".npz")


# --- collection ------------------------------------------------------------------------------------
def _env(workload: Any, arrivals: int) -> Any:
    import gymnasium as gym

    import msj_gym  # noqa: F401  (registers the envs)
    from msj_gym.agents.network import ENV_KWARGS

    return gym.make("MSJ-v0", scenario=workload, num_arrivals=arrivals, **ENV_KWARGS).unwrapped


def collect_system(task: dict[str, Any]) -> dict[str, np.ndarray]:
    """One system's compared decisions (a worker's unit of work): observations, masks and the cost of
    each valid action (NaN where invalid)."""
    from msj_gym.agents.network import NetworkAgent, NetworkPolicy, NetworkWeights
    from msj_gym.env import planning
    from msj_gym.env.futures import FuturePlayer
    from msj_gym.workloads.workload import Workload

    a = task["args"]
    workload = Workload(**task["workload"])
    env = _env(workload, a["episode_arrivals"])
    weights = None if task["weights"] is None else NetworkWeights(**task["weights"])
    # round 1 plays out under the heuristics (the best of them per action), later rounds under the
    # network alone: an action judged by a continuation the policy never follows (a heuristic that
    # holds servers for a wide job) is judged wrongly, and only the policy's own continuation shows it
    bases: list[Any] = list(a["bases"])
    agent = None
    if weights is not None:
        bases = [NetworkPolicy(weights)]
        agent = NetworkAgent(weights, workload.num_classes)
    sampling, streams, futures = task["seed"].spawn(3)
    rng = np.random.default_rng(sampling)
    player = FuturePlayer(
        env, bases, futures=a["futures"], horizon=a["horizon"], seed=futures, persist=a["persist"]
    )
    episode_seeds = streams.generate_state(10_000, dtype=np.uint64)
    n_act = int(env.action_space.n)
    obs_l: list[np.ndarray] = []
    mask_l: list[np.ndarray] = []
    cost_l: list[np.ndarray] = []
    episode = 0
    while len(cost_l) < task["decisions"] and episode < episode_seeds.size:
        obs, info = env.reset(seed=int(episode_seeds[episode] >> np.uint64(1)))
        driver = a["bases"][episode % len(a["bases"])]
        episode += 1
        over = False
        while not over and len(cost_l) < task["decisions"]:
            mask = info["action_mask"]
            valid = np.flatnonzero(mask)
            if (
                valid.size >= 2
                and planning.jobs_arrived(env) >= a["skip"]
                and rng.random() < 1.0 / a["sample_every"]
            ):
                played = player.costs(valid)
                if played is not None:
                    costs = np.full(n_act, np.nan)
                    costs[valid] = played.mean(axis=1).min(axis=0)
                    obs_l.append(np.asarray(obs, dtype=np.float32))
                    mask_l.append(mask.copy())
                    cost_l.append(costs)
            if rng.random() < a["explore"]:
                obs, _, _, over, info = env.step(int(rng.choice(valid)))
            elif agent is not None:
                obs, _, _, over, info = env.step(int(agent.predict(obs, action_masks=mask)[0]))
            else:
                obs, _, _, over, info = planning.step_policy(env, driver)
    n = len(cost_l)
    return {
        "obs": np.array(obs_l, dtype=np.float32).reshape(n, -1),
        "mask": np.array(mask_l, dtype=np.bool_).reshape(n, n_act),
        "cost": np.array(cost_l).reshape(n, n_act),
        "system": np.full(n, task["index"], dtype=np.int64),
    }


def _workload_dict(wl: Any) -> dict[str, Any]:
    return {"num_servers": wl.num_servers, "classes": wl.classes, "load": wl.load, "name": wl.name}


def _map(fn: Any, tasks: list[dict[str, Any]], args: argparse.Namespace, what: str) -> list[Any]:
    """``fn`` over ``tasks`` (each with an ``"index"``) on the leaderboard's backends, in task order,
    with a progress bar."""
    from tqdm import tqdm

    from msj_gym.experiments.runner import map_unordered

    out: dict[int, Any] = {}
    done = map_unordered(fn, tasks, args.backend, args.workers, args.address)
    for task, result in tqdm(done, total=len(tasks), desc=what, file=sys.stderr):
        out[task["index"]] = result
    return [out[i] for i in range(len(tasks))]


def collect(args: argparse.Namespace, systems: list[Any], weights: Any, round_index: int) -> dict:
    per = math.ceil(args.decisions / len(systems))
    seeds = np.random.SeedSequence([args.seed, round_index]).spawn(len(systems))
    plain = vars(args) | {"bases": args.base_list}
    plain = {k: v for k, v in plain.items() if not isinstance(v, Path)}
    tasks = [
        {
            "args": plain,
            "workload": _workload_dict(wl),
            "weights": None if weights is None else {"hidden": weights.hidden, "code": weights.code,
                                                     "arrays": weights.arrays},
            "seed": seeds[i],
            "decisions": per,
            "index": i,
        }
        for i, wl in enumerate(systems)
    ]  # fmt: skip
    parts = _map(collect_system, tasks, args, f"round {round_index + 1}: comparing decisions")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


# --- fitting ---------------------------------------------------------------------------------------
def torch_network(hidden: int, code: int) -> Any:
    """The torch twin of :func:`msj_gym.agents.network.scores` (float64): scores ``(N, 33)`` of
    class-set observations ``(N, 456)``, padding classes at ``-1e9``."""
    import torch
    from torch import nn

    from msj_gym.agents.network import IN_FEATURES, SLOTS
    from msj_gym.env.layout import SET_CLASS_FEATURES, SET_SYSTEM_FEATURES

    class ClassSetScores(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc1 = nn.Linear(IN_FEATURES, hidden)
            self.enc2 = nn.Linear(hidden, code)
            self.score1 = nn.Linear(3 * code, hidden)
            self.score2 = nn.Linear(hidden, 1)
            self.wait1 = nn.Linear(2 * code, hidden)
            self.wait2 = nn.Linear(hidden, 1)
            self.double()

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            n = obs.shape[0]
            system = obs[:, :SET_SYSTEM_FEATURES]
            rows = obs[:, SET_SYSTEM_FEATURES:].reshape(n, SLOTS, SET_CLASS_FEATURES)
            real = rows[:, :, 0] > 0.5
            x = torch.cat([system[:, None, :].expand(n, SLOTS, -1), rows], dim=2)
            e = torch.relu(self.enc2(torch.relu(self.enc1(x))))
            w = real.to(e.dtype)[:, :, None]
            mean = (e * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)
            top = torch.where(real[:, :, None], e, torch.full_like(e, -1e30)).max(dim=1).values
            ctx = torch.cat([mean, top], dim=1)
            per = torch.cat([e, ctx[:, None, :].expand(n, SLOTS, -1)], dim=2)
            cls = self.score2(torch.relu(self.score1(per)))[:, :, 0]
            cls = torch.where(real, cls, torch.full_like(cls, -1e9))
            wait = self.wait2(torch.relu(self.wait1(ctx)))
            return torch.cat([wait, cls], dim=1)

    return ClassSetScores()


_TORCH_NAMES = {
    "enc1_w": "enc1.weight", "enc1_b": "enc1.bias", "enc2_w": "enc2.weight", "enc2_b": "enc2.bias",
    "score1_w": "score1.weight", "score1_b": "score1.bias", "score2_w": "score2.weight",
    "score2_b": "score2.bias", "wait1_w": "wait1.weight", "wait1_b": "wait1.bias",
    "wait2_w": "wait2.weight", "wait2_b": "wait2.bias",
}  # fmt: skip


def to_torch(weights: Any, module: Any) -> None:
    """Copy ``weights`` (:class:`NetworkWeights`) into the torch twin ``module``."""
    import torch

    state = {
        _TORCH_NAMES[k]: torch.as_tensor(v.reshape(module.state_dict()[_TORCH_NAMES[k]].shape))
        for k, v in weights.arrays.items()
    }
    module.load_state_dict(state)


def from_torch(module: Any) -> Any:
    """The :class:`NetworkWeights` of the torch twin ``module``."""
    from msj_gym.agents.network import NetworkWeights

    state = module.state_dict()
    arrays = {}
    for k, name in _TORCH_NAMES.items():
        a = state[name].detach().cpu().numpy().astype(np.float64)
        arrays[k] = a.reshape(-1) if k in ("score2_w", "wait2_w") else a
    return NetworkWeights(module.enc1.out_features, module.enc2.out_features, arrays)


def fit(data: dict[str, np.ndarray], start: Any, args: argparse.Namespace, seed: int) -> tuple[Any, float]:
    """Fit the network (from ``start``'s weights) to the decisions' costs; returns the weights and the
    held-out regret (mean cost above the cheapest compared action, in units of each system's spread)."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)  # a small network: more threads only contend with the collecting workers
    module = torch_network(args.hidden, args.code)
    if start is not None:
        to_torch(start, module)
    module.float()  # trained in single precision; the weights are kept in double
    cost, mask = data["cost"], data["mask"]
    valid = ~np.isnan(cost)
    mean = np.nanmean(cost, axis=1, keepdims=True)
    adv = np.where(valid, cost - mean, 0.0)
    scale = np.ones(len(cost))
    for s in np.unique(data["system"]):
        rows = data["system"] == s
        rms = float(np.sqrt(np.mean(adv[rows][valid[rows]] ** 2))) if valid[rows].any() else 0.0
        scale[rows] = rms if rms > 0 else 1.0
    adv = adv / scale[:, None]
    n = len(cost)
    gen = np.random.default_rng(seed)
    perm = gen.permutation(n)
    n_val = max(1, n // 10)
    val, train = perm[:n_val], perm[n_val:]
    obs_t = torch.as_tensor(data["obs"], dtype=torch.float32)
    adv_t = torch.as_tensor(adv, dtype=torch.float32)
    mask_t = torch.as_tensor(mask)
    optimizer = torch.optim.Adam(module.parameters(), lr=args.learning_rate)

    def regret(idx: np.ndarray) -> float:
        with torch.no_grad():
            z = module(obs_t[idx]).masked_fill(~mask_t[idx], -1e18)
        choice = z.argmax(dim=1).numpy()
        return float(np.mean(adv[idx, choice] - np.where(valid[idx], adv[idx], np.inf).min(axis=1)))

    for epoch in range(args.epochs):
        order = train[gen.permutation(len(train))]
        for chunk in np.array_split(order, max(1, len(order) // 256)):
            z = module(obs_t[chunk]).masked_fill(~mask_t[chunk], -1e18)
            logp = torch.log_softmax(z, dim=1)
            p = logp.exp()
            entropy = -(p * logp.masked_fill(~mask_t[chunk], 0.0)).sum(dim=1)
            loss = (p * adv_t[chunk]).sum(dim=1).mean() - args.entropy * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if epoch % 10 == 9 or epoch == args.epochs - 1:
            log(f"  epoch {epoch + 1}: held-out regret {regret(val):.4f}")
    return from_torch(module), regret(val)


# --- selection -------------------------------------------------------------------------------------
def _score_system(task: dict[str, Any]) -> dict[str, float]:
    """Mean response times of the network and each heuristic on one system, paired seeds."""
    import msj_gym
    from msj_gym.agents.network import NetworkPolicy, NetworkWeights
    from msj_gym.workloads.workload import Workload

    wl = Workload(**task["workload"])
    n = task["arrivals"]
    out: dict[str, float] = {}
    policies: dict[str, Any] = {p: p for p in task["heuristics"]}
    if task["weights"] is not None:
        policies["network"] = NetworkPolicy(NetworkWeights(**task["weights"]))
    for name, policy in policies.items():
        total = 0.0
        for seed in task["seeds"]:
            r = msj_gym.simulate(wl, policy, num_arrivals=n, warmup=n // 10, seed=seed)
            total += r.mean_response_time if r.stable else math.inf
        out[name] = total / len(task["seeds"])
    return out


def selection_score(args: argparse.Namespace, systems: list[Any], weights: Any) -> tuple[float, list]:
    """Mean log ratio of the network to the best heuristic on ``systems`` (an unstable run counts as
    :data:`UNSTABLE_RATIO` times it; systems where every heuristic is unstable are left out), and the
    per-system rows."""
    tasks = [
        {"workload": _workload_dict(wl), "arrivals": args.select_arrivals, "seeds": [10_001, 10_002],
         "heuristics": list(HEURISTICS), "index": i,
         "weights": {"hidden": weights.hidden, "code": weights.code, "arrays": weights.arrays}}
        for i, wl in enumerate(systems)
    ]  # fmt: skip
    rows = _map(_score_system, tasks, args, "selection runs")
    logs = []
    for row in rows:
        best = min(v for k, v in row.items() if k != "network")
        if math.isinf(best):
            continue
        # an unstable run counts as ten times the best heuristic, so that one system does not hide the rest
        logs.append(math.log(min(row["network"] / best, UNSTABLE_RATIO)))
    return (float(np.mean(logs)) if logs else math.inf), rows


# --- the script ------------------------------------------------------------------------------------
def training_systems(args: argparse.Namespace) -> list[Any]:
    """The systems a run trains on: ``--scenario``'s, else ``--systems`` drawn from the generator."""
    from msj_gym.workloads.generator import sample_systems
    from msj_gym.workloads.scenarios import load_scenario
    from msj_gym.workloads.workload import Workload

    if not args.scenario:
        return sample_systems(args.seed, args.systems)
    out = []
    for spec in args.scenario:
        try:
            wl = load_scenario(spec).build()
        except (ValueError, OSError) as exc:
            raise ValueError(f"--scenario {spec!r}: {' '.join(str(exc).split())}") from None
        if not isinstance(wl, Workload):
            raise ValueError(f"--scenario {spec!r}: expected a Poisson multiserver-job scenario")
        out.append(wl)
    return out


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    from msj_gym.agents._cli import read_round, write_round
    from msj_gym.agents.network import NetworkWeights
    from msj_gym.atomic import atomic_path
    from msj_gym.workloads.generator import sample_systems

    t0 = time.perf_counter()
    systems = training_systems(args)
    selection = sample_systems(args.seed + 1_000_003, args.select_systems)
    weights: NetworkWeights | None = None
    kept: NetworkWeights | None = None
    kept_score = math.inf
    history = []
    settings = {k: str(getattr(args, k)) for k in _COLLECTION}
    for r in range(args.rounds):
        # a round's decisions depend on the settings and on the network that drove it
        key = (
            json.dumps(settings) + f"|round {r}|" + ("" if weights is None else "network " + weights.digest())
        )
        where = None if args.data is None else args.data.with_name(f"{args.data.stem}-round{r}.npz")
        part = read_round(where, key)
        if part is None:
            # the last fit drives the episodes and plays the branches out: a step of policy iteration,
            # which also mends what the last one got wrong (a base it leaned on that it never follows)
            part = collect(args, systems, weights, r)
            write_round(where, key, part)
        log(f"round {r + 1}: {len(part['cost'])} decisions compared")
        # fitted on its own round's decisions, from the last fit's weights: earlier rounds' costs are
        # another policy's improvement step
        weights, regret = fit(part, weights, args, args.seed + r)
        if where is not None:  # each round's network beside its decisions, to look into later
            with atomic_path(where.with_name(f"{where.stem}-network.npz")) as tmp:
                weights.save(tmp)
        score, _ = selection_score(args, selection, weights)
        log(f"round {r + 1}: held-out regret {regret:.4f}; mean log ratio to the best heuristic {score:+.4f}")
        history.append({"round": r + 1, "decisions": len(part["cost"]), "regret": regret, "selection": score})
        if score < kept_score:
            kept, kept_score = weights, score
    final = kept if kept is not None else weights
    if final is None:  # rounds >= 1 fit a network each
        raise RuntimeError("expert iteration: no round fitted a network")
    with atomic_path(args.out) as tmp:
        final.save(tmp)
    meta = {
        "algo": "class-set-network",
        "method": "expert iteration (rollouts in sampled futures, distilled into the network)",
        "command": f"{PROG} " + " ".join(sys.argv[1:] if argv is None else argv),
        "env_id": "MSJ-v0",
        "env_kwargs": {"observation": "classes", "actions": "jobs", "queue_window": 1},
        "hidden": final.hidden,
        "code": final.code,
        "bases": args.base_list,
        "training_systems": (
            {"scenarios": args.scenario} if args.scenario else {"seed": args.seed, "count": args.systems}
        ),
        "selection_systems": {"seed": args.seed + 1_000_003, "count": args.select_systems},
        "rounds": history,
        "selection_mean_log_ratio": kept_score,
        "train_wall_seconds": round(time.perf_counter() - t0, 1),
    }
    meta_path = args.out.with_suffix(".json")
    with atomic_path(meta_path) as tmp:
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
    log(f"wrote {args.out} and {meta_path.name} ({time.perf_counter() - t0:.0f} s)")
    return args.out


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    sys.exit(run_script(PROG, main))
