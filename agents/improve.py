"""Learn a scheduler by rollout policy improvement: compare every action by simulation, with common
random numbers, and fit a policy network to the better ones.

    python -m msj_gym.agents.improve --scenario sf-fig2 --load 0.7 --base msf --rounds 2 --decisions 35000 \\
        --seed 0 --out agents/checkpoints/rollout-sf-fig2-0.7.zip

One step of approximate policy iteration (Bertsekas & Tsitsiklis, Neuro-Dynamic Programming, Sec. 6.2;
classification-based, as in Lagoudakis & Parr 2003). Along episodes driven by a base heuristic
(``--base``, with ``--explore`` of its decisions replaced by a random valid action so that the states an
improved policy reaches are seen too), at sampled decisions the environment is snapshotted and every
valid action is tried: take it, then let the base policy play the episode out natively
(:func:`msj_gym.env.planning.play_out`). All branches of a decision see the same future arrivals and service
times, so the differences of their costs (the time jobs spend in the system until the episode's end)
are the differences the action makes, without the noise of the job stream: branches that reach the
same state coincide from then on. The policy network (a MaskablePPO policy, so that the checkpoint
loads and runs like any other) is trained to minimise the expected cost of its action distribution,
``sum_a pi(a|s) (C_a - mean C)`` with a small entropy bonus, a cost-sensitive classification whose
minimiser picks ``argmin_a E[C_a | observation]``: the policy improvement step, averaged over all the
states that look alike to the network. From the second round on (``--rounds``), the collection
episodes follow the last fitted policy, so that the states it reaches are compared too, and the fit
uses every round's decisions.

The fit kept after each round is the one with the lowest simulated mean response time on the
selection episodes, the previous round's included. Measured on sf-fig2 at load 0.7
(docs/agents.md): without the entropy bonus, or started from a clone of the base's decisions
(``--imitate-epochs``), the softmax saturates on the base's actions and the fit never leaves them;
regressing the logits on the costs (``--loss regress``) is dominated by the rare decisions with
large cost differences and does worse than the base.

The learned policy never sees the exact optimum: it learns from the environment only. Its checkpoint
is a MaskablePPO model (the ``.json`` beside it records ``"algo": "maskable-ppo"`` as the model format
and ``"method": "rollout-improvement"``), evaluated like any agent with ``agents/evaluate.py`` and
ranked by ``msj-gym leaderboard --agent``.
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

PROG = "python -m msj_gym.agents.improve"


def log(message: str) -> None:
    print(message, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from msj_gym.agents._cli import ArgumentParser

    ap = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    _add_env_flags(ap)
    _add_collection_flags(ap)
    _add_fit_flags(ap)
    _add_run_flags(ap)
    args = ap.parse_args(argv)
    _check_args(ap, args)
    return args


def _add_env_flags(ap: argparse.ArgumentParser) -> None:
    from msj_gym.agents._cli import add_queue_window

    g = ap.add_argument_group("the env and the base heuristic")
    g.add_argument(
        "--env-id",
        default="MSJ-v0",
        choices=("MSJ-v0", "MSJPreemptive-v0"),
        help="the env the agent acts in (MSJPreemptive-v0: it may also preempt)",
    )
    g.add_argument("--scenario", default="sf-fig2", help="the system learned on")
    g.add_argument("--load", type=float, default=None, help="its load (default: the scenario's)")
    g.add_argument("--k", type=int, default=None, help="number of servers (default: the scenario's)")
    g.add_argument(
        "--base",
        default="msf",
        help="the heuristic to improve on: a policy id, or module:attr naming a Policy (class or instance)",
    )
    g.add_argument("--obs-jobs", type=int, default=0, help="oldest waiting jobs in the observation")
    add_queue_window(g)
    g.add_argument(
        "--actions",
        choices=("jobs", "priority", "priority-shortest"),
        default="jobs",
        help="the env's action mode: start (or preempt) one job per step, or pick the class served first",
    )
    g.add_argument(
        "--advisor", default=None, help="with priority actions: one more action, this policy's decision"
    )
    g.add_argument("--reveal-sizes", action="store_true", help="job sizes in the observation")


def _add_collection_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("collecting the compared decisions")
    g.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="collection rounds; from the second on, episodes follow the last fitted policy",
    )
    g.add_argument("--decisions", type=int, default=30_000, help="decisions compared per round")
    g.add_argument("--episode-arrivals", type=int, default=3000, help="arrivals per collection episode")
    g.add_argument("--skip", type=int, default=300, help="arrivals before the first sampled decision")
    g.add_argument(
        "--tail", type=int, default=1000, help="arrivals after the last sampled decision (the look-ahead)"
    )
    g.add_argument("--sample-every", type=float, default=8.0, help="mean decisions between two samples")
    g.add_argument("--explore", type=float, default=0.1, help="share of decisions made at random")
    g.add_argument(
        "--python-branches",
        action="store_true",
        help="play each branch out from Python (restore, step, play_out) instead of in one compiled call",
    )


def _add_fit_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("fitting and selecting the policy")
    g.add_argument("--net-arch", type=int, nargs="+", default=[64, 64], help="hidden layer widths")
    g.add_argument("--epochs", type=int, default=40, help="passes over the compared decisions per fit")
    g.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's step size in the fits")
    g.add_argument(
        "--imitate-epochs", type=int, default=0, help="epochs of cloning the base before the cost loss"
    )
    g.add_argument("--entropy", type=float, default=0.01, help="entropy bonus of the expected-cost loss")
    g.add_argument(
        "--loss",
        choices=("expected-cost", "regress"),
        default="expected-cost",
        help="minimise the policy's expected cost, or fit the logits to minus the centred costs (regress)",
    )
    g.add_argument("--candidates", type=int, default=3, help="fits per round, the best simulated kept")
    g.add_argument(
        "--no-grid",
        dest="grid",
        action="store_false",
        help="every fit with --imitate-epochs and --entropy (default: the fits try FIT_GRID's settings)",
    )
    g.add_argument("--select-seeds", type=int, default=2, help="training episodes scoring each fit")
    g.add_argument("--select-arrivals", type=int, default=10_000, help="arrivals per scoring episode")
    g.add_argument("--seed", type=int, default=0, help="draws the episodes and the fits")


def _add_run_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("where it runs and what it writes")
    g.add_argument("--threads", type=int, default=1, help="torch threads")
    g.add_argument(
        "--data", type=Path, default=None, help="folder keeping each round's compared decisions (resume)"
    )
    g.add_argument("--out", type=Path, required=True, help="checkpoint to write (.zip)")


def _check_args(ap: Any, args: argparse.Namespace) -> None:
    """Every number and path before any work: one line naming the flag and its value."""
    from msj_gym.agents._cli import check_count, check_load, check_net_arch, check_number, check_output
    from msj_gym.workloads.workload import MAX_SERVERS

    for name in ("decisions", "episode_arrivals", "epochs", "rounds", "candidates", "select_seeds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: expected a positive integer, got {getattr(args, name)}")
    if args.select_arrivals < 2:
        ap.error(f"--select-arrivals: expected at least 2, got {args.select_arrivals}")
    check_load("--load", args.load)
    if args.k is not None:
        check_count("--k", args.k, 1, MAX_SERVERS)
    check_count("--skip", args.skip, 0)
    check_count("--tail", args.tail, 0)
    check_count("--obs-jobs", args.obs_jobs, 0, 1024)
    check_count("--queue-window", args.queue_window, 1, 1024)
    check_count("--imitate-epochs", args.imitate_epochs, 0)
    check_count("--seed", args.seed, 0, 2**63 - 1)
    check_count("--threads", args.threads, 1, 1024)
    check_count("--decisions", args.decisions, 1, 10**8)
    check_count("--episode-arrivals", args.episode_arrivals, 1, 10**8)
    check_net_arch("--net-arch", args.net_arch)
    check_number("--learning-rate", args.learning_rate, 0.0, 10.0, open_lo=True)
    check_number("--entropy", args.entropy, 0.0, 100.0)
    if not 0 <= args.explore < 1:
        ap.error(f"--explore: expected a share in [0, 1), got {args.explore}")
    if args.sample_every < 1:
        ap.error(f"--sample-every: expected at least 1, got {args.sample_every}")
    if args.skip + args.tail >= args.episode_arrivals:
        ap.error(
            f"--skip + --tail: expected fewer than --episode-arrivals = {args.episode_arrivals}, "
            f"got {args.skip} + {args.tail}"
        )
    if args.out.suffix != ".zip":
        ap.error(f"--out: expected a .zip path, got {str(args.out)!r}")
    check_output("--out", args.out, ".zip")  # written after hours of work: checked now
    check_output("--data", args.data, folder=True)
    try:
        base_policy(args.base)
    except ValueError as exc:
        ap.error(str(exc))


def base_policy(spec: str) -> Any:
    """The base heuristic: a registered policy id, or ``module:attr`` naming a Policy."""
    from msj_gym.registry import policy_from_spec

    return policy_from_spec(spec, "--base")


def env_kwargs_of(args: argparse.Namespace) -> dict[str, Any]:
    """The env the agent acts in: the same keywords at collection, training and evaluation."""
    kwargs: dict[str, Any] = {"scenario": args.scenario, "obs_jobs": args.obs_jobs}
    if args.load is not None:
        kwargs["load"] = args.load
    if args.k is not None:
        kwargs["num_servers"] = args.k
    if args.queue_window != 1:
        kwargs["queue_window"] = args.queue_window
    if args.actions != "jobs":
        kwargs["actions"] = args.actions
    if args.advisor is not None:
        kwargs["advisor"] = args.advisor
    if args.reveal_sizes:
        kwargs["reveal_sizes"] = True
    return kwargs


class BaseActions:
    """The base heuristic's next single action in the current state (asked again after every start,
    which for the class-priority heuristics is the same as its whole decision)."""

    def __init__(self, policy: Any, env: Any) -> None:
        self.policy, self.env = policy, env

    def __call__(self) -> int:
        from msj_gym.env import planning

        # the policy's data kept per episode (prepared afresh after a restore), as in a native run
        words = planning.decision_now(self.env, self.policy)
        return self.env.encode(int(words[0])) if words.size else 0


def collect(args: argparse.Namespace, round_index: int, follow: Any = None) -> dict[str, np.ndarray]:
    """Observations, masks and per-action costs of ``args.decisions`` sampled decisions, on episodes
    driven by the base (``follow=None``) or by the model ``follow``, with ``args.explore`` random."""
    import gymnasium as gym

    import msj_gym  # noqa: F401  (registers the envs)
    from msj_gym.env import planning
    from msj_gym.env.branches import BASE_DECISION, BranchPlayer, python_costs
    from msj_gym.env.msj_env import MSJEnv

    env = gym.make(args.env_id, num_arrivals=args.episode_arrivals, **env_kwargs_of(args)).unwrapped
    assert isinstance(env, MSJEnv)  # what MSJ-v0 and MSJPreemptive-v0 (--env-id's choices) make
    base = base_policy(args.base)
    base_action = BaseActions(base, env)
    compiled = not args.python_branches and type(base).kernel is not None
    player = BranchPlayer(env, base) if compiled else None  # a rule written in Python: branch by branch
    # one stream per round for the sampling, another for the episodes' job streams
    sampling, streams = np.random.SeedSequence([args.seed, round_index]).spawn(2)
    rng = np.random.default_rng(sampling)
    episode_seeds = streams.generate_state(10**5, dtype=np.uint64)
    n_act = env.action_space.n
    # with priority actions the base's decision is not one of the agent's actions: the base drives
    # the episode through step_policy, and its own decision is compared as one more branch
    priority = args.actions != "jobs"
    # the advisor's action is the base's decision when the base advises; else no action names it
    delegate = env.num_classes + 1 if priority and args.advisor == args.base else -1
    obs_l: list[np.ndarray] = []
    mask_l: list[np.ndarray] = []
    cost_l: list[np.ndarray] = []
    base_l: list[int] = []
    base_cost_l: list[float] = []
    t0, episode = time.perf_counter(), 0
    while len(cost_l) < args.decisions:
        obs, info = env.reset(seed=int(episode_seeds[episode] >> np.uint64(1)))
        assert env.core is not None  # reset() made it
        episode += 1
        over = False
        while not over and len(cost_l) < args.decisions:
            mask = info["action_mask"]
            arrived = planning.jobs_arrived(env)
            window = args.skip <= arrived < args.episode_arrivals - args.tail
            choice = base_action() if not priority else delegate
            if window and mask.sum() >= 2 and rng.random() < 1.0 / args.sample_every:
                valid = np.flatnonzero(mask)
                costs = np.full(n_act, np.nan)
                own = priority and delegate < 0  # else the advisor's branch is the base's decision
                branches = np.r_[valid, BASE_DECISION] if own else valid
                played = player.costs(branches) if player is not None else python_costs(env, base, branches)
                costs[valid] = played[: valid.size]
                base_cost = played[-1] if own else costs[choice]
                obs_l.append(obs)
                mask_l.append(mask.copy())
                cost_l.append(costs)
                base_l.append(choice)
                base_cost_l.append(base_cost)
                if len(cost_l) % 5000 == 0:
                    seconds = time.perf_counter() - t0
                    log(f"round {round_index + 1}: {len(cost_l)} decisions compared ({seconds:.0f} s)")
            if rng.random() < args.explore:
                action = int(rng.choice(np.flatnonzero(mask)))
            elif follow is not None:
                action = int(follow.predict(obs, action_masks=mask, deterministic=True)[0])
            elif priority:
                obs, _, _, over, info = planning.step_policy(env, base)
                continue
            else:
                action = choice
            obs, _, _, over, info = env.step(action)
    return {
        "obs": np.array(obs_l, dtype=np.float32),
        "mask": np.array(mask_l),
        "cost": np.array(cost_l),
        "base": np.array(base_l, dtype=np.int64),
        "base_cost": np.array(base_cost_l),
    }


def selection_score(model: Any, args: argparse.Namespace) -> float:
    """Mean response time of ``model`` (deterministic) over ``--select-seeds`` training episodes of
    ``--select-arrivals`` arrivals (seeds drawn from ``--seed``, apart from any evaluation seed)."""
    import gymnasium as gym

    env = gym.make(args.env_id, num_arrivals=args.select_arrivals, **env_kwargs_of(args))
    seeds = np.random.SeedSequence([args.seed, 99]).generate_state(args.select_seeds, dtype=np.uint64)
    means = []
    for s in seeds:
        obs, info = env.reset(seed=int(s >> np.uint64(1)))
        over = False
        while not over:
            action = model.predict(obs, action_masks=info["action_mask"], deterministic=True)[0]
            obs, _, _, over, info = env.step(int(action))
        means.append(info["mean_response_time"] if info["stable"] else math.inf)
    return float(np.mean(means))


# (epochs of cloning the base first, entropy bonus): measured on sf-fig2 (docs/agents.md), a fit on
# the base's own states needs the clone as a prior where the data is thin, and a fit started from the
# clone can saturate on it without the entropy bonus and with it alike; which one wins varies
FIT_GRID = ((5, 0.0), (0, 0.01), (5, 0.01))


def fit(
    model: Any,
    data: dict[str, np.ndarray],
    args: argparse.Namespace,
    seed: int,
    imitate_epochs: int,
    entropy: float,
) -> dict:
    """The cost-sensitive loss (after ``--imitate-epochs`` of cloning the base's decisions, if any).
    Returns held-out regrets (mean cost above the best compared action) of the base and the fit."""
    import torch

    policy = model.policy
    obs, mask, cost = data["obs"], data["mask"], data["cost"]
    n = len(cost)
    valid = ~np.isnan(cost)
    mean = np.nanmean(cost, axis=1, keepdims=True)
    adv = np.where(valid, cost - mean, 0.0)
    scale = float(np.sqrt(np.mean(adv[valid] ** 2))) or 1.0
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=gen).numpy()
    n_val = max(1, n // 10)
    val, train = perm[:n_val], perm[n_val:]
    obs_t = torch.as_tensor(obs, dtype=torch.float32)
    adv_t = torch.as_tensor(adv / scale, dtype=torch.float32)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate)

    def probs(idx: np.ndarray) -> Any:
        return policy.get_distribution(obs_t[idx], action_masks=mask[idx]).distribution.probs

    def regret(idx: np.ndarray, choice: np.ndarray) -> float:
        best = np.nanmin(cost[idx], axis=1)
        return float(np.mean(cost[idx, choice] - best))

    def batches() -> list[np.ndarray]:
        order = train[torch.randperm(len(train), generator=gen).numpy()]
        return np.array_split(order, max(1, len(order) // 256))

    base_choice = data["base"]
    base_t = torch.as_tensor(base_choice)
    if imitate_epochs and (base_choice < 0).any():
        raise ValueError("--imitate-epochs: the base's decisions are not agent actions here (--actions)")
    for _ in range(imitate_epochs):  # optional: start from the base's decisions
        for chunk in batches():
            dist = policy.get_distribution(obs_t[chunk], action_masks=mask[chunk])
            loss = -dist.log_prob(base_t[chunk]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    valid_t = torch.as_tensor(valid, dtype=torch.float32)

    def loss_of(idx: np.ndarray) -> Any:
        if args.loss == "expected-cost":
            dist = policy.get_distribution(obs_t[idx], action_masks=mask[idx])
            # the entropy bonus keeps the softmax from saturating before the costs have been seen
            return (dist.distribution.probs * adv_t[idx]).sum(dim=1).mean() - entropy * dist.entropy().mean()
        # the logits regress minus the centred costs over the valid actions: the minimiser of the
        # squared error is -E[C_a - mean C | observation], so the greedy action is the improvement
        # step's, and no saturated softmax stalls the fit
        z = policy.get_distribution(obs_t[idx]).distribution.logits
        v = valid_t[idx]
        centred = z - (z * v).sum(dim=1, keepdim=True) / v.sum(dim=1, keepdim=True)
        return (((centred + adv_t[idx]) * v) ** 2).sum(dim=1).mean()

    for epoch in range(args.epochs):
        for chunk in batches():
            loss = loss_of(chunk)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if epoch % 10 == 9 or epoch == args.epochs - 1:
            with torch.no_grad():
                choice = probs(val).argmax(dim=1).numpy()
            log(f"epoch {epoch + 1}: held-out regret {regret(val, choice):.4f}")
    with torch.no_grad():
        choice = probs(val).argmax(dim=1).numpy()
    base_regret = float(np.mean(data["base_cost"][val] - np.nanmin(cost[val], axis=1)))
    return {"val_regret": regret(val, choice), "val_regret_base": base_regret}


def _fit_candidates(
    args: argparse.Namespace, env: Any, data: dict[str, np.ndarray], r: int, t0: float
) -> tuple[Any, dict[str, float]]:
    """Round ``r``'s ``--candidates`` fits on ``data`` (settings from :data:`FIT_GRID`, then other
    initialisations): the one whose simulated mean response time on training seeds is lowest, with
    its figures. Which fit works varies with the data."""
    from sb3_contrib import MaskablePPO

    best = None
    for c in range(args.candidates):
        seed = args.seed * 1000 + r * 100 + c
        imitate, entropy = FIT_GRID[c % len(FIT_GRID)] if args.grid else (args.imitate_epochs, args.entropy)
        if (data["base"] < 0).any() and args.grid:
            imitate = 0  # the base's decisions are no agent actions to clone
        candidate = MaskablePPO(
            "MlpPolicy", env, seed=seed, policy_kwargs={"net_arch": list(args.net_arch)}, verbose=0
        )
        fitted = fit(candidate, data, args, seed, imitate, entropy)
        fitted["selection_mean_response_time"] = selection_score(candidate, args)
        regrets = f"held-out regret {fitted['val_regret']:.3f} (base {fitted['val_regret_base']:.3f})"
        seconds = time.perf_counter() - t0
        log(
            f"round {r + 1}, fit {c + 1} (imitate {imitate}, entropy {entropy}): "
            f"{len(data['cost'])} decisions, {regrets}, simulated mean "
            f"response time {fitted['selection_mean_response_time']:.4f}, {seconds:.0f} s"
        )
        if best is None or fitted["selection_mean_response_time"] < best[1]["selection_mean_response_time"]:
            best = (candidate, fitted)
    assert best is not None  # --candidates is at least 1 (_check_args)
    return best


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    import gymnasium as gym
    import torch

    import msj_gym

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    env = gym.make(args.env_id, **env_kwargs_of(args))
    # what a round's decisions depend on: not the number of rounds, so that a rerun with more rounds
    # reuses the ones done (round r follows the fit kept after round r - 1, the same in both runs)
    unused = ("out", "data", "threads", "rounds")
    key = json.dumps({k: v for k, v in sorted(vars(args).items()) if k not in unused}, default=str)
    data: dict[str, np.ndarray] | None = None
    model, t_collect = None, 0.0
    scores: dict[str, float] = {}  # the kept fit's
    from msj_gym.agents._cli import read_round, write_round

    for r in range(args.rounds):
        cached = None if args.data is None else args.data / f"round-{r + 1}.npz"
        part = read_round(cached, f"{key}/{r}")
        if part is None:
            t1 = time.perf_counter()
            log(f"round {r + 1}: collecting {args.decisions} compared decisions")
            part = collect(args, r, follow=model)
            t_collect += time.perf_counter() - t1
            write_round(cached, f"{key}/{r}", part)
        else:
            log(f"round {r + 1}: {len(part['cost'])} compared decisions from {cached}")
        data = part if data is None else {k: np.concatenate([data[k], part[k]]) for k in data}
        best = _fit_candidates(args, env, data, r, t0)
        if (
            model is not None
            and scores["selection_mean_response_time"] <= best[1]["selection_mean_response_time"]
        ):
            # a round never makes the result worse on the selection episodes
            previous = scores["selection_mean_response_time"]
            log(f"round {r + 1}: no fit beats round {r}'s ({previous:.4f}); it is kept")
        else:
            model, scores = best
    # --rounds is at least 1 (_check_args), and the first round keeps a fit
    assert model is not None and data is not None
    wall = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from msj_gym.agents.checkpoint import write_checkpoint

    meta = {
        "command": "python -m msj_gym.agents.improve " + " ".join(sys.argv[1:] if argv is None else argv),
        "algo": "maskable-ppo",
        "method": "rollout-improvement",
        "base": args.base,
        "rounds": args.rounds,
        "env_id": args.env_id,
        "env_kwargs": env_kwargs_of(args),
        "decisions": len(data["cost"]),
        "seed": args.seed,
        "collect_wall_seconds": round(t_collect, 1),
        "train_wall_seconds": round(wall, 1),
        **{k: round(v, 5) for k, v in scores.items()},
        "msj_gym_version": msj_gym.__version__,
    }
    write_checkpoint(model, args.out, meta)
    log(f"rollout improvement of {args.base}: {len(data['cost'])} decisions, {wall:.0f} s -> {args.out}")
    return args.out


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    sys.exit(run_script(PROG, main))
