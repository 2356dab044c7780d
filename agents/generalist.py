"""Learn one scheduler for many systems: rollout policy improvement over a distribution of systems,
with the class-set observation and an equivariant network.

    python -m msj_gym.agents.generalist --out generalist.zip --workers 2
    python -m msj_gym.agents.generalist --sizes --out generalist-sizes.zip --workers 2

The systems come from :func:`msj_gym.workloads.generator.sample_systems` (``--systems`` of them for
training, ``--select-systems`` others for choosing among fits; both from ``--seed``). On each, as in
``agents/improve.py`` (one step of approximate policy iteration, classification-based): along episodes
driven by the system's base (the best of ``--bases`` there, by the heuristics' tables; first round)
or by the last fitted network (later rounds), with ``--explore`` of the decisions random, decisions
are sampled and every valid action is tried: take it, then let the base play the episode out, all
branches of a decision in one compiled call (:class:`msj_gym.env.branches.BranchPlayer`), every branch
on the same future jobs (common random numbers). The base is prepared afresh for every branch, as a
native run starts it (``--play-out fresh``, the default, which the shipped agents were trained with),
or is the env's own advisor, followed as the agent's "follow" action does from the advisor's data as
the run has it (``--play-out advisor``): Adaptive Quickswap's draining phase and Static Quickswap's
turn carry into the play-out, where a fresh base forgets them. With ``--persist M`` a branch keeps
its action for the next ``M`` decisions (while it stays valid) before the base takes over, which
prices a choice that is cheap once and costly when made at every decision. The compared decisions
are split evenly over the training systems, or with ``--wide-weight W`` W times as many for a system
with a full-width class, where the network alone goes wrong (none of these options beat the shipped
settings on the selection systems: ``docs/generalist.md``). The network
(:class:`msj_gym.agents.set_policy.ClassSetMaskablePolicy`) is fitted to minimise the expected cost of its
action distribution with an entropy bonus (``msj_gym.agents.improve.fit``), on the costs of every round, and
the fit kept is the one whose simulated mean response time is best relative to the best base on the
selection systems (a geometric mean of ratios). Durations have mean 1 in every generated system, so
costs are in one unit everywhere; the largest 1 % of cost differences are clipped, as they come from
branches that run away over the look-ahead.

The agent acts in ``MSJ-v0`` with ``observation="classes"`` and priority actions (``--sizes``: the
shortest waiting jobs of a class first, and the observation shows job sizes), so it runs on every
system with up to 32 classes. It learns from the environment only: it never sees an optimal policy.

Three derivations leave the network as it is and write a new checkpoint: ``--retune`` chooses the
follow bias and guard again, ``--fit-gate`` fits the gate, and ``--simulate-selection`` has the agent
choose the base it follows by simulating each on the system its observation describes
(:class:`msj_gym.agents.system_model.SimulatedSelector`) instead of by its selector head; with
``--rehearse N`` it also rehearses there (its network with each base, and the pick followed throughout,
runs of N arrivals) to settle whether its network is trusted, instead of by its gate; with
``--fallbacks H1,H2,...`` it may also pick heuristics its network was not trained beside, which it then
follows throughout (the env gains one advisor's action for each; the weights do not change), unless its
rehearsal trusts the network there instead (``--no-rehearse-fallbacks``: a fallback pick is final);
with ``--rescue alone``, where the rehearsal trusts the network, its guards hand decisions to the
heuristic simulated best alone on the system rather than to the network's base.

Collection runs in ``--workers`` processes, or on a Ray cluster with ``--backend ray [--address ...]``,
with the same results. ``--data DIR`` keeps each round's compared decisions (a rerun reuses them).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from msj_gym.agents.system_model import ALL_FLAGGED, RESCUES, play_together, refuse_narrow, run_mean

OBLIVIOUS_BASES = ("first-fit", "adaptive-quickswap", "static-quickswap")
SIZE_AWARE_BASES = ("easy-backfilling", "first-fit", "adaptive-quickswap")


def log(message: str) -> None:
    print(message, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from msj_gym.agents._cli import ArgumentParser

    # a refusal is one line under run_script, as the other agents' scripts and msj-gym make it
    ap = ArgumentParser(prog="python -m msj_gym.agents.generalist", description=__doc__.split("\n\n")[0])
    _add_system_flags(ap)
    _add_following_flags(ap)
    _add_collection_flags(ap)
    _add_fit_flags(ap)
    _add_run_flags(ap)
    _add_derivation_flags(ap)
    _add_simulated_selection_flags(ap)
    ap.set_defaults(loss="expected-cost")  # msj_gym.agents.improve.fit's loss
    args = ap.parse_args(argv)
    _check_numbers(ap, args)
    _check_derivations(ap, args)
    for name in ("follow_biases", "guard_ages", "guard_queues"):
        setattr(args, name, _number_list(ap, "--" + name.replace("_", "-"), getattr(args, name)))
    from msj_gym.agents._cli import check_output

    try:  # written after the training and the collection: checked before them
        check_output("--out", args.out, ".zip")
        check_output("--data", args.data, folder=True)
    except ValueError as exc:
        ap.error(str(exc))
    if args.simulate_selection is not None:
        _take_checkpoint_bases(ap, args)
    args.bases = (
        tuple(args.bases.split(",")) if args.bases else (SIZE_AWARE_BASES if args.sizes else OBLIVIOUS_BASES)
    )
    args.fallbacks = tuple(b.strip() for b in args.fallbacks.split(",") if b.strip())
    _check_simulated_selection(ap, args)
    _check_heuristics(ap, args)
    try:
        from msj_gym.experiments.runner import check_backend

        check_backend(args.backend, args.workers, args.address)
    except ValueError as exc:
        ap.error(str(exc))
    return args


def _add_system_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("systems and bases")
    g.add_argument("--sizes", action="store_true", help="size-aware: shortest jobs first, sizes observed")
    g.add_argument("--bases", default=None, help="comma-separated base heuristics (default by --sizes)")
    g.add_argument("--systems", type=int, default=48, help="training systems drawn from the generator")
    g.add_argument("--select-systems", type=int, default=12, help="other systems that choose the fit")
    g.add_argument(
        "--selector-systems", type=int, default=1000, help="more systems on which the bases are compared"
    )


def _add_following_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("following the selected base (tuned on the selection systems at the end)")
    g.add_argument(
        "--follow-biases",
        default="1,3,100",
        help="logit biases towards following the selected base, tried on the selection systems at the end",
    )
    g.add_argument(
        "--guard-ages",
        default="10,30",
        help="starvation guards tried with them: follow the base where a job waited this many mean durations",
    )
    g.add_argument(
        "--guard-queues",
        default="",
        help="queue guards tried with them: follow the base where the waiting jobs' needs add up to more "
        "than this many times k (default: none tried)",
    )


def _add_collection_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("collecting the compared decisions of each round")
    g.add_argument("--rounds", type=int, default=3, help="rounds of rollout improvement")
    g.add_argument("--decisions", type=int, default=40_000, help="decisions compared per round")
    g.add_argument(
        "--episode-arrivals", type=int, default=2000, help="arrivals of each episode decisions are sampled on"
    )
    g.add_argument("--skip", type=int, default=200, help="arrivals before the first sampled decision")
    g.add_argument("--tail", type=int, default=800, help="arrivals after the last sampled decision")
    g.add_argument("--sample-every", type=float, default=6.0, help="mean decisions between two samples")
    g.add_argument("--explore", type=float, default=0.1, help="share of decisions made at random")
    g.add_argument(
        "--play-out",
        choices=("fresh", "advisor"),
        default="fresh",
        help="the branches' base: prepared afresh per branch, or the env's advisor followed with its data",
    )
    g.add_argument(
        "--persist",
        type=int,
        default=1,
        help="a compared action is kept for this many decisions (while valid) before the base plays on",
    )
    g.add_argument(
        "--wide-weight",
        type=float,
        default=1.0,
        help="a training system with a full-width class (a need of k) gets this many times the compared "
        "decisions of another",
    )


def _add_fit_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("fitting and selecting the network")
    g.add_argument("--epochs", type=int, default=30, help="passes over the compared decisions per fit")
    g.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's step size in the fits")
    g.add_argument("--hidden", type=int, default=64, help="width of the network's layers")
    g.add_argument("--candidates", type=int, default=3, help="fits per round, the best on selection kept")
    g.add_argument("--select-seeds", type=int, default=2, help="runs per selection system")
    g.add_argument("--select-arrivals", type=int, default=6000, help="arrivals per selection run")
    g.add_argument("--seed", type=int, default=0, help="draws the systems, the episodes and the fits")


def _add_run_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("where it runs and what it writes")
    g.add_argument("--workers", type=int, default=1, help="worker processes (collection and selection)")
    g.add_argument("--threads", type=int, default=1, help="torch threads of the fitting process")
    g.add_argument(
        "--backend", default="local", choices=("local", "ray"), help="local processes, or a Ray cluster"
    )
    g.add_argument("--address", default=None, help="a Ray cluster (with --backend ray)")
    g.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder keeping each round's decisions (and --fit-gate's table)",
    )
    g.add_argument("--out", type=Path, required=True, help="checkpoint to write (.zip)")


def _add_derivation_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("derivations (a new checkpoint around a trained one's network)")
    g.add_argument(
        "--retune",
        type=Path,
        default=None,
        help="only choose the follow bias and guard of this checkpoint (its .json beside it) again",
    )
    g.add_argument(
        "--fit-gate",
        type=Path,
        default=None,
        help="only fit the gate of this checkpoint (its .json beside it): on which systems the network's "
        "own choices are trusted, and on which its selected base is followed throughout",
    )
    g.add_argument(
        "--gate-systems", type=int, default=320, help="generated systems the gate is fitted on (--fit-gate)"
    )
    g.add_argument(
        "--simulate-selection",
        type=Path,
        default=None,
        help="only have this checkpoint (its .json beside it) choose the base it follows by simulating "
        "each base on the system its observation describes, instead of by its selector head",
    )
    g.add_argument(
        "--trust-pickle",
        action="store_true",
        help="read a --retune, --fit-gate or --simulate-selection checkpoint in stable-baselines3's own "
        "format, whose pickles can run any code (only a file you trust)",
    )
    g.add_argument(
        "--trust-imports",
        action="store_true",
        help="let a checkpoint's .json name module:attr bases outside the registry and msj_gym",
    )


def _add_simulated_selection_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("how --simulate-selection picks")
    g.add_argument(
        "--selection-seeds",
        type=int,
        default=2,
        help="runs per base on the observed system (--simulate-selection)",
    )
    g.add_argument(
        "--selection-arrivals", type=int, default=20_000, help="arrivals per such run (--simulate-selection)"
    )
    g.add_argument(
        "--selection-lean",
        type=float,
        default=0.01,
        help="excess over the best base within which the safe base is picked (--simulate-selection)",
    )
    g.add_argument(
        "--rehearse",
        type=int,
        default=0,
        help="arrivals of each rehearsal run: the agent played on the observed system, its network "
        "with each base and the pick followed throughout, to settle whether its network is trusted "
        "there (--simulate-selection; 0: no rehearsal, the gate decides)",
    )
    g.add_argument(
        "--rehearse-trust",
        type=float,
        default=-0.02,
        help="a lean, as a share: above 0, how much better than the pick followed throughout the "
        "network must rehearse to be trusted; below 0, how much better the pick must rehearse to be "
        "followed throughout instead (--simulate-selection with --rehearse)",
    )
    g.add_argument(
        "--fallbacks",
        default="",
        help="comma-separated heuristics the agent may also follow throughout, its network set aside, "
        "where one simulates better than every base (--simulate-selection; added to the env's "
        "advisors after the bases)",
    )
    g.add_argument(
        "--no-rehearse-fallbacks",
        dest="rehearse_fallbacks",
        action="store_false",
        help="follow a fallback pick throughout without rehearsing it (--rehearse with --fallbacks; "
        "by default the rehearsal may trust the network instead)",
    )
    g.add_argument(
        "--all-flagged",
        choices=ALL_FLAGGED,
        default="little",
        help="where every heuristic is flagged unstable on some simulated run: pick among those flagged "
        "on the fewest runs by Little's law (little), or the safe base (safest) (--simulate-selection)",
    )
    g.add_argument(
        "--rescue",
        choices=RESCUES,
        default="base",
        help="where the rehearsal trusts the network and a guard trips: hand decisions to the network's "
        "base, or to the heuristic simulated best alone on the system (alone) (--simulate-selection "
        "--rehearse)",
    )


def _check_numbers(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every number flag in its range, and the output's suffix."""
    from msj_gym.agents._cli import check_count, check_number

    try:
        check_count("--threads", args.threads, 1, 1024)
        check_number("--learning-rate", args.learning_rate, 0.0, 10.0, open_lo=True)
    except ValueError as exc:
        ap.error(str(exc))
    positive = (
        "systems", "select_systems", "selector_systems", "rounds", "decisions", "epochs", "hidden", "persist",
        "gate_systems", "selection_seeds", "selection_arrivals",
    )  # fmt: skip
    for name in (*positive, "candidates"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')}: expected a positive integer, got {getattr(args, name)}")
    if args.select_arrivals < 2:  # a run's fewest (the simulator's)
        ap.error(f"--select-arrivals: expected an integer >= 2, got {args.select_arrivals}")
    if args.skip + args.tail >= args.episode_arrivals:
        ap.error(
            f"--skip + --tail: expected fewer than --episode-arrivals = {args.episode_arrivals}, "
            f"got {args.skip} + {args.tail}"
        )
    if not (math.isfinite(args.wide_weight) and args.wide_weight > 0):
        ap.error(f"--wide-weight: expected a positive number, got {args.wide_weight}")
    if not (math.isfinite(args.selection_lean) and args.selection_lean >= 0):
        ap.error(f"--selection-lean: expected a non-negative number, got {args.selection_lean}")
    if args.rehearse < 0:
        ap.error(f"--rehearse: expected a whole number of arrivals (0: off), got {args.rehearse}")
    if not (math.isfinite(args.rehearse_trust) and -1 < args.rehearse_trust < 1):
        ap.error(f"--rehearse-trust: expected a share in (-1, 1), got {args.rehearse_trust}")
    if not 0 <= args.explore < 1:
        ap.error(f"--explore: expected a share in [0, 1), got {args.explore}")
    if args.sample_every < 1:
        ap.error(f"--sample-every: expected at least 1, got {args.sample_every}")
    if args.out.suffix != ".zip":
        ap.error(f"--out: expected a .zip path, got {str(args.out)!r}")


def _check_derivations(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A derivation's checkpoint is there with its ``.json`` (and is data only, unless trusted), and
    one derivation at a time."""
    for flag in ("retune", "fit_gate", "simulate_selection"):
        given = getattr(args, flag)
        if given is not None and not (given.is_file() and given.with_suffix(".json").is_file()):
            name = "--" + flag.replace("_", "-")
            ap.error(f"{name}: expected a checkpoint .zip with its .json beside it, got {str(given)!r}")
        if given is not None and not args.trust_pickle:  # refused before the tables, which take minutes
            from msj_gym.agents.checkpoint import checkpoint_kind, pickle_refusal

            if checkpoint_kind(given) == "pickle":
                ap.error(pickle_refusal(f"--{flag.replace('_', '-')} {str(given)!r}"))
    derived = [f for f in ("retune", "fit_gate", "simulate_selection") if getattr(args, f) is not None]
    if len(derived) > 1:
        names = " and ".join("--" + f.replace("_", "-") for f in derived)
        ap.error(f"{names}: expected one of them at a time (each writes its own checkpoint)")


def _number_list(ap: argparse.ArgumentParser, flag: str, text: str) -> list[float]:
    """A comma-separated list of non-negative finite numbers."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        ap.error(f"{flag}: expected comma-separated numbers, got {text!r}")
    if any(not math.isfinite(b) or b < 0 for b in values):
        ap.error(f"{flag}: expected non-negative finite numbers, got {text!r}")
    return values


def _take_checkpoint_bases(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--simulate-selection``: the bases are the checkpoint's, its advisors in order (``--bases``, if
    given, must name them), and ``--sizes`` is its; its ``.json`` is kept in ``args.simulated_meta``."""
    try:
        meta = json.loads(args.simulate_selection.with_suffix(".json").read_text())
        own = [str(b) for b in meta["bases"]]
        args.sizes = bool(meta["env_kwargs"].get("reveal_sizes", False))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        ap.error(f"--simulate-selection: {str(args.simulate_selection)!r} has no bases in its .json")
    from msj_gym.trust import check_imports

    try:  # the bases are imported by name: one outside the registry and msj_gym only if trusted
        with _trusted(args):
            check_imports(f"--simulate-selection {str(args.simulate_selection)!r}", "bases", own)
    except ValueError as exc:
        ap.error(str(exc))
    if args.bases and tuple(args.bases.split(",")) != tuple(own):
        ap.error(f"--bases: the checkpoint follows {','.join(own)}, got {args.bases!r}")
    args.bases = ",".join(own)
    args.simulated_meta = meta  # read once: the derivation writes it on, updated


def _check_simulated_selection(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The flags that shape a simulated pick only with ``--simulate-selection`` and what they act on."""
    if args.fallbacks and args.simulate_selection is None:
        ap.error("--fallbacks: expected with --simulate-selection (they are followed on its simulated pick)")
    if args.rescue != "base" and not (args.simulate_selection is not None and args.rehearse):
        ap.error(
            f"--rescue {args.rescue}: expected with --simulate-selection and --rehearse (it acts where "
            "the rehearsal trusts the network)"
        )
    if not args.rehearse_fallbacks and not (args.fallbacks and args.rehearse):
        ap.error("--no-rehearse-fallbacks: expected with --rehearse and --fallbacks (it settles their picks)")


def _check_heuristics(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The bases and fallbacks: registered, neither preempting nor (without ``--sizes``) reading sizes,
    wide enough for every system, and the fallbacks other than the bases, each once."""
    from msj_gym.registry import policy_from_spec

    for flag, specs in (("--bases", args.bases), ("--fallbacks", args.fallbacks)):
        for b in specs:
            try:
                policy = policy_from_spec(b, flag)
            except ValueError as exc:
                ap.error(str(exc))
            if policy.preemptive or (policy.size_aware and not args.sizes):
                ap.error(f"{flag}: {b!r} preempts or reads sizes; the agent may not (add --sizes for sizes)")
            try:
                refuse_narrow(policy, flag, b)
            except ValueError as exc:
                ap.error(str(exc))
    twice = sorted({b for b in args.fallbacks if (*args.bases, *args.fallbacks).count(b) > 1})
    if twice:
        ap.error(f"--fallbacks: expected heuristics other than the bases, each once, got {','.join(twice)}")


def _trusted(args: argparse.Namespace) -> Any:
    """What ``--trust-pickle`` and ``--trust-imports`` grant (:mod:`msj_gym.trust`), as a context."""
    from msj_gym.trust import IMPORTS, PICKLE, trusting

    return trusting([k for k, on in ((PICKLE, args.trust_pickle), (IMPORTS, args.trust_imports)) if on])


def env_kwargs(sizes: bool, bases: tuple[str, ...]) -> dict[str, Any]:
    """The agent's env keywords (any system with up to 32 classes): the class set, priority actions,
    and each base heuristic's decision as one more action."""
    kwargs: dict[str, Any] = {"observation": "classes", "actions": "priority", "advisor": list(bases)}
    if sizes:
        kwargs.update(actions="priority-shortest", reveal_sizes=True)
    return kwargs


# --- collection (worker processes) -------------------------------------------------------------------
def _policy_from_state(state: dict[str, Any] | None, env: Any) -> Any:
    """The fitted network from its saved weights (``None``: none yet)."""
    if state is None:
        return None
    import torch
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    torch.set_num_threads(1)
    model = MaskablePPO(ClassSetMaskablePolicy, env, policy_kwargs=state["policy_kwargs"], device="cpu")
    model.policy.load_state_dict(state["weights"])
    return model


def _system_env(task: dict[str, Any]) -> Any:
    """The agent's env on the task's system, episodes of ``--episode-arrivals`` (unwrapped)."""
    import gymnasium as gym

    import msj_gym  # noqa: F401  (registers the envs)
    from msj_gym.env.msj_env import MSJEnv

    a = task["args"]
    env = gym.make(
        "MSJ-v0",
        scenario=task["system"],
        num_arrivals=a["episode_arrivals"],
        **env_kwargs(a["sizes"], a["bases"]),
    ).unwrapped
    assert isinstance(env, MSJEnv)  # what MSJ-v0 makes
    return env


def _base(env: Any, task: dict[str, Any]) -> Any:
    """The system's base as ``--play-out`` has the branches play it: its advisor in the env (its data
    carried on), or a policy of its own prepared afresh for every branch."""
    if task["args"].get("play_out", "fresh") == "advisor":
        return env.advisors[task["best"]]
    from msj_gym.registry import policy_from_spec

    return policy_from_spec(task["args"]["bases"][task["best"]], "--bases")


def collect_system(task: dict[str, Any]) -> dict[str, np.ndarray]:
    """The compared decisions of one system (a worker's unit of work): observations, masks and each
    valid action's cost with the system's best base (``task["best"]``) playing the branches out (NaN
    where invalid; the other bases' advisor actions count as invalid: the agent follows the one its
    selector picks, and on a training system that is the best one)."""
    from msj_gym.env import planning
    from msj_gym.env.branches import BranchPlayer

    a = task["args"]
    env = _system_env(task)
    follow = _policy_from_state(task["follow"], env)
    if follow is not None:
        return _collect_following(task, follow)
    base = _base(env, task)
    player = BranchPlayer(env, base, persist=a.get("persist", 1))
    sampling, streams = task["seed"].spawn(2)
    rng = np.random.default_rng(sampling)
    episode_seeds = streams.generate_state(10_000, dtype=np.uint64)
    n_act = env.action_space.n
    others = np.array([j != task["best"] for j in range(len(a["bases"]))])  # advisors not followed
    base_action = n_act - others.size + task["best"]
    obs_l: list[np.ndarray] = []
    mask_l: list[np.ndarray] = []
    cost_l: list[np.ndarray] = []
    episode = 0
    while len(cost_l) < task["decisions"] and episode < episode_seeds.size:
        obs, info = env.reset(seed=int(episode_seeds[episode] >> np.uint64(1)))
        assert env.core is not None  # reset() made it
        episode += 1
        over = False
        while not over and len(cost_l) < task["decisions"]:
            mask = info["action_mask"]
            arrived = planning.jobs_arrived(env)
            window = a["skip"] <= arrived < a["episode_arrivals"] - a["tail"]
            mine = mask.copy()
            mine[n_act - others.size :] &= ~others
            if window and mine.sum() >= 2 and rng.random() < 1.0 / a["sample_every"]:
                valid = np.flatnonzero(mine)
                costs = np.full(n_act, np.nan)
                costs[valid] = player.costs(valid)
                obs_l.append(obs)
                mask_l.append(mine)
                cost_l.append(costs)
            if rng.random() < a["explore"]:
                obs, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(mine))))
            elif player.follows is not None:  # the advisor followed, as its action does
                obs, _, _, over, info = env.step(base_action)
            else:
                obs, _, _, over, info = planning.step_policy(env, base)
    return _decisions(obs_l, mask_l, cost_l, n_act, task["index"])


def _decisions(
    obs_l: list[np.ndarray],
    mask_l: list[np.ndarray],
    cost_l: list[np.ndarray],
    n_act: int | np.integer,  # a Discrete space's n is a NumPy integer
    index: int,
) -> dict[str, np.ndarray]:
    n = len(cost_l)
    return {
        "obs": np.array(obs_l, dtype=np.float32).reshape(n, -1),
        "mask": np.array(mask_l, dtype=np.bool_).reshape(n, n_act),
        "cost": np.array(cost_l).reshape(n, n_act),
        "base_cost": np.full(n, np.nan),  # no base decision is compared (msj_gym.agents.improve.fit reads it)
        "system": np.full(n, index, dtype=np.int64),
    }


#: Episodes a worker plays side by side when a fitted network drives them (rounds after the first),
#: so that the network decides for all of them in one batch instead of one decision at a time.
FOLLOW_EPISODES = 16


def _collect_following(task: dict[str, Any], follow: Any) -> dict[str, np.ndarray]:
    """:func:`collect_system` for a round whose episodes the fitted network ``follow`` drives:
    :data:`FOLLOW_EPISODES` episodes side by side, each with its own env, branch player, sampling
    stream and episode seeds, stepped in a fixed order so that the data depend on the task alone."""
    from msj_gym.env import planning
    from msj_gym.env.branches import BranchPlayer

    a = task["args"]
    lanes: list[dict[str, Any]] = []
    for seq in task["seed"].spawn(FOLLOW_EPISODES):
        env = _system_env(task)
        sampling, streams = seq.spawn(2)
        seeds = streams.generate_state(1_000, dtype=np.uint64)
        obs, info = env.reset(seed=int(seeds[0] >> np.uint64(1)))
        lanes.append(
            {"env": env, "player": BranchPlayer(env, _base(env, task), persist=a.get("persist", 1)),
             "rng": np.random.default_rng(sampling),
             "seeds": seeds, "episode": 1, "obs": obs, "info": info}
        )  # fmt: skip
    n_act = lanes[0]["env"].action_space.n
    others = np.array([j != task["best"] for j in range(len(a["bases"]))])  # advisors not followed
    obs_l: list[np.ndarray] = []
    mask_l: list[np.ndarray] = []
    cost_l: list[np.ndarray] = []
    while len(cost_l) < task["decisions"]:
        asked, actions = [], {}
        for i, lane in enumerate(lanes):
            env, rng, mask = lane["env"], lane["rng"], lane["info"]["action_mask"]
            arrived = planning.jobs_arrived(env)
            window = a["skip"] <= arrived < a["episode_arrivals"] - a["tail"]
            mine = mask.copy()
            mine[n_act - others.size :] &= ~others
            if window and mine.sum() >= 2 and rng.random() < 1.0 / a["sample_every"]:
                if len(cost_l) < task["decisions"]:
                    valid = np.flatnonzero(mine)
                    costs = np.full(n_act, np.nan)
                    costs[valid] = lane["player"].costs(valid)
                    obs_l.append(lane["obs"])
                    mask_l.append(mine)
                    cost_l.append(costs)
            if rng.random() < a["explore"]:
                actions[i] = int(rng.choice(np.flatnonzero(mine)))
            else:
                asked.append(i)
        if asked:
            chosen, _ = follow.predict(
                np.array([lanes[i]["obs"] for i in asked]),
                action_masks=np.array([lanes[i]["info"]["action_mask"] for i in asked]),
                deterministic=True,
            )
            actions.update(zip(asked, (int(x) for x in chosen), strict=True))
        for i, lane in enumerate(lanes):
            obs, _, _, over, info = lane["env"].step(actions[i])
            if over:
                if lane["episode"] >= lane["seeds"].size:
                    raise RuntimeError("generalist: a lane ran out of episode seeds")
                obs, info = lane["env"].reset(seed=int(lane["seeds"][lane["episode"]] >> np.uint64(1)))
                lane["episode"] += 1
            lane["obs"], lane["info"] = obs, info
    return _decisions(obs_l, mask_l, cost_l, n_act, task["index"])


def base_table(task: dict[str, Any]) -> dict[str, Any]:
    """Each base's mean response time on one system over ``task["seeds"]`` native runs (unstable:
    inf), and the agent's first observation there (for the selector's static features)."""
    import gymnasium as gym

    import msj_gym  # noqa: F401  (registers the envs)
    from msj_gym import Simulator
    from msj_gym.registry import policy_from_spec

    system = task["system"]
    means = []
    for b in task["bases"]:
        runs = [
            Simulator(system, policy_from_spec(b, "--bases"), seed=s, num_arrivals=task["arrivals"]).run()
            for s in task["seeds"]
        ]
        means.append(float(np.mean([run_mean(r) for r in runs])))
    env = gym.make("MSJ-v0", scenario=system, num_arrivals=100, **task["env_kwargs"])
    obs, _ = env.reset(seed=0)
    return {"means": np.array(means), "obs": obs}


def excess_of(means: np.ndarray, cap: float = 10.0) -> np.ndarray:
    """Per system and base, ``T / T_best - 1`` capped at ``cap`` (an unstable base: the cap; a system
    where every base is unstable teaches nothing: zeros)."""
    best = np.min(means, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(np.isfinite(means), means / best - 1.0, cap)
    out = np.where(np.isfinite(best), np.minimum(out, cap), 0.0)
    return out


# --- selection -----------------------------------------------------------------------------------
def agent_means(
    model: Any,
    systems: list[Any],
    seeds: list[int],
    arrivals: int,
    kwargs: dict[str, Any],
    flagged: bool = True,
) -> np.ndarray:
    """Per system, the network's (deterministic) mean response time over ``seeds`` through the env
    (each run's as :func:`run_mean` counts it). Every env steps together, so that the network sees
    one batch per step."""
    import gymnasium as gym

    envs: list[Any] = []
    slots: list[tuple[int, int]] = []
    for i, wl in enumerate(systems):
        for s in seeds:
            envs.append(gym.make("MSJ-v0", scenario=wl, num_arrivals=arrivals, **kwargs))
            slots.append((i, s))

    def predict(live: list[int], obs: np.ndarray, masks: np.ndarray) -> Any:
        return model.predict(obs, action_masks=masks, deterministic=True)[0]

    result = play_together(envs, [s for _, s in slots], predict, flagged)
    out = np.zeros(len(systems))
    for i in range(len(systems)):
        out[i] = float(np.mean([r for r, (sys_i, _) in zip(result, slots, strict=True) if sys_i == i]))
    return out


def selection_score(agent: np.ndarray, best: np.ndarray) -> float:
    """The geometric mean of the agent's mean response time over the best base's, per system (an
    unstable agent counts 10 times the base; a system where every base is unstable is left out). NaN
    when every system is left out: the selection runs then rank no fit."""
    keep = np.isfinite(best)
    if not keep.any():
        return math.nan
    ratio = np.where(np.isfinite(agent[keep]), agent[keep] / best[keep], 10.0)
    return float(np.exp(np.mean(np.log(np.minimum(ratio, 10.0)))))


# --- the run ---------------------------------------------------------------------------------------
def has_full_width_class(system: Any) -> bool:
    """Whether some class of ``system`` needs every server (the systems where holding servers back
    for a wide job is the decision that matters, and where the network alone goes wrong)."""
    k = int(system.num_servers)
    return any(int(c.server_need) == k for c in system.classes)


def decision_shares(decisions: int, systems: list[Any], wide_weight: float = 1.0) -> np.ndarray:
    """The compared decisions each training system gets: ``decisions`` split in proportion to a weight
    of ``wide_weight`` for a system with a full-width class and 1 for another, rounded up."""
    if wide_weight == 1.0:  # the even split, as integers (so that it stays what it was, bit for bit)
        return np.full(len(systems), -(-decisions // len(systems)), dtype=np.int64)
    weights = np.array([wide_weight if has_full_width_class(w) else 1.0 for w in systems])
    return np.ceil(decisions * weights / weights.sum()).astype(np.int64)


def _round_tasks(
    args: argparse.Namespace, systems: list[Any], best: np.ndarray, r: int, follow: Any
) -> list[dict[str, Any]]:
    shares = decision_shares(args.decisions, systems, args.wide_weight)
    passed = ["episode_arrivals", "skip", "tail", "sample_every", "explore", "sizes", "bases"]
    passed += ["persist", "play_out"]
    worker_args = {k: getattr(args, k) for k in passed}
    seeds = np.random.SeedSequence([args.seed, r]).spawn(len(systems))
    return [
        {
            "index": i,
            "system": wl,
            "best": int(best[i]),
            "decisions": int(shares[i]),
            "seed": seeds[i],
            "follow": follow,
            "args": worker_args,
        }
        for i, wl in enumerate(systems)
    ]


def _weights_digest(model: Any) -> str:
    """A digest of ``model``'s policy weights (and buffers): the network that drives a later round's
    episodes, so that its decisions are never reused for another network."""
    import hashlib

    h = hashlib.sha256()
    for name, tensor in sorted(model.policy.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _normalise(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The costs as each decision's deviations from its mean, in units of its system's typical
    deviation (the root mean square over the system's decisions, at least 0.01), so that every
    system teaches as much as any other, and clipped at the 99th percentile of all."""
    cost = data["cost"]
    dev = cost - np.nanmean(cost, axis=1, keepdims=True)
    scale = np.ones(len(cost))
    for i in np.unique(data["system"]):
        mine = data["system"] == i
        scale[mine] = max(float(np.sqrt(np.nanmean(dev[mine] ** 2))), 0.01)
    dev /= scale[:, None]
    bound = float(np.nanpercentile(np.abs(dev), 99)) or 1.0
    return {**data, "cost": np.clip(dev, -bound, bound)}


def tune_following(
    model: Any,
    score: float,
    select: list[Any],
    seeds: list[int],
    arrivals: int,
    kwargs: dict[str, Any],
    best: np.ndarray,
    biases: list[float],
    ages: list[float],
    queues: list[float] | None = None,
) -> tuple[float, float | None, float | None, float]:
    """How strongly the agent follows its selected base: a bias towards following (``biases``), the
    starvation guard (follow wherever some class's oldest waiting job is older than ``ages`` times its
    mean duration) and the queue guard (follow wherever the waiting jobs' needs add up to more than
    ``queues`` times k; ``None``: no such guard), each combination tried on the selection systems
    after the network's own (``score``: bias 0, no guard). Sets the best on ``model``; returns it
    ``(bias, age, queue)`` and its ratio."""
    from msj_gym.env.observe import squash

    net = model.policy.mlp_extractor

    def put(bias: float, age: float | None, queue: float | None) -> None:
        net.follow_bias.fill_(bias)
        net.follow_when_age.fill_(2.0 if age is None else squash.py_func(age))
        net.follow_when_queue.fill_(2.0 if queue is None else squash.py_func(queue))

    chosen: tuple[float, float | None, float | None] = (0.0, None, None)
    for bias in [0.0, *biases]:
        for age in [None, *ages]:
            for queue in [None, *(queues or [])]:
                if bias == 0.0 and age is None and queue is None:
                    continue  # the network's own, scored already
                put(bias, age, queue)
                got = selection_score(agent_means(model, select, seeds, arrivals, kwargs), best)
                guard = "no guard" if age is None else f"guard at {age:g} mean durations"
                if queue is not None:
                    guard += f", queue guard at {queue:g} k"
                log(f"follow bias {bias:g}, {guard}: selection ratio to the best base {got:.4f}")
                if got < score:
                    score, chosen = got, (bias, age, queue)
    put(*chosen)
    log(
        f"kept: follow bias {chosen[0]:g}, guard {chosen[1]}, queue guard {chosen[2]} "
        f"(selection ratio {score:.4f})"
    )
    return *chosen, score


def _retune(args: argparse.Namespace, select: list[Any], seeds: list[int], table: dict, t0: float) -> Path:
    """``--retune``: the follow bias and guard of a trained checkpoint chosen again, on the selection
    systems of ``--seed``; written to ``--out`` with its ``.json``."""
    from msj_gym.agents.checkpoint import load_model

    meta = json.loads(args.retune.with_suffix(".json").read_text())
    # Any: its network is the class-set one (ClassSetNetwork), with buffers SB3's types do not know
    model: Any = load_model(args.retune, algo="maskable-ppo")
    kwargs, best = meta["env_kwargs"], table["means"].min(axis=1)
    net = model.policy.mlp_extractor
    net.follow_bias.fill_(0.0)
    net.follow_when_age.fill_(2.0)
    net.follow_when_queue.fill_(2.0)
    own = selection_score(agent_means(model, select, seeds, args.select_arrivals, kwargs), best)
    log(f"the network's own choices: selection ratio to the best base {own:.4f}")
    bias, age, queue, score = _tune(args, model, own, select, seeds, kwargs, best)
    return _write_derived(
        model,
        args.out,
        meta,
        "retuned",
        follow_bias=bias,
        follow_when_older_than_mean_durations=age,
        follow_when_queue_over_k=queue,
        selection_ratio_to_best_base=round(score, 5),
        retuned_by="python -m msj_gym.agents.generalist " + " ".join(sys.argv[1:]),
        retune_wall_seconds=round(time.perf_counter() - t0, 1),
    )


def _simulate_selection(
    args: argparse.Namespace, select: list[Any], seeds: list[int], table: dict, extra: dict, t0: float
) -> Path:
    """``--simulate-selection``: the checkpoint's network, guard and gate unchanged, choosing the base it
    follows by simulating each base on the system its observation describes
    (:class:`msj_gym.agents.system_model.SimulatedSelector`: ``--selection-seeds`` runs of
    ``--selection-arrivals`` arrivals, a lean of ``--selection-lean`` towards the safe base, the one
    with the least mean excess on the selector's systems, as the selector head's lean is). Its ratio to
    the best base on the selection systems is logged beside the selector head's; written to ``--out``
    with its ``.json``."""
    from gymnasium import spaces

    from msj_gym.agents.checkpoint import load_model
    from msj_gym.agents.system_model import SimulatedSelector

    meta = dict(args.simulated_meta)  # the checkpoint's .json, as parse_args read it
    kwargs, best = meta["env_kwargs"], table["means"].min(axis=1)
    model: Any = load_model(args.simulate_selection, algo="maskable-ppo")
    selector_net = model.policy.mlp_extractor  # the loaded one, whatever its fallbacks
    selector_net.simulated = None  # the selector head's choice first, for the comparison
    head = selection_score(agent_means(model, select, seeds, args.select_arrivals, kwargs), best)
    log(f"the selector head's choice: selection ratio to the best base {head:.4f}")
    safest = int(np.argmin(excess_of(extra["means"]).mean(axis=0)))
    # the fallbacks are the env's advisors after the bases: one action each
    kwargs = {**kwargs, "advisor": [*args.bases, *args.fallbacks]}
    selector = SimulatedSelector(
        bases=args.bases,
        safest=safest,
        fallbacks=args.fallbacks,
        seeds=tuple(range(args.selection_seeds)),
        arrivals=args.selection_arrivals,
        lean=args.selection_lean,
        rehearse=args.rehearse,
        trust=args.rehearse_trust,
        rehearse_fallbacks=args.rehearse_fallbacks,
        all_flagged=args.all_flagged,
        rescue=args.rescue,
        env_id=meta.get("env_id", "MSJ-v0"),
        env_kwargs=kwargs if args.rehearse else None,
    )
    config = selector.config()
    # built again around its own selector, with an action per advisor (the fallbacks' too); the saved
    # weights do not depend on the fallbacks
    policy_kwargs = {**model.policy_kwargs, "simulated_selection": config}
    slots = selector_net.slots
    model = load_model(
        args.simulate_selection,
        algo="maskable-ppo",
        overrides={
            "policy_kwargs": policy_kwargs,
            "action_space": spaces.Discrete(1 + slots + len(args.bases) + len(args.fallbacks)),
        },
    )
    net = model.policy.mlp_extractor
    net.simulated = selector
    score = selection_score(agent_means(model, select, seeds, args.select_arrivals, kwargs), best)
    rehearsed = f", rehearsing {args.rehearse} arrivals" if args.rehearse else ""
    fallen = f", fallbacks {','.join(args.fallbacks)}" if args.fallbacks else ""
    fallen += "" if args.rehearse_fallbacks else " (followed without rehearsal)"
    log(
        f"simulated selection (safe base {args.bases[safest]}{rehearsed}{fallen}): "
        f"selection ratio to the best base {score:.4f}"
    )
    meta["env_kwargs"] = kwargs
    return _write_derived(
        model,
        args.out,
        meta,
        "simulated selection",
        simulated_selection=config,
        fallbacks=list(args.fallbacks),
        selection_ratio_to_best_base=round(score, 5),
        selection_ratio_with_selector_head=round(head, 5),
        simulated_selection_by="python -m msj_gym.agents.generalist " + " ".join(sys.argv[1:]),
        simulated_selection_wall_seconds=round(time.perf_counter() - t0, 1),
    )


def _write_derived(model: Any, out: Path, meta: dict[str, Any], what: str, **fields: Any) -> Path:
    """A checkpoint made from another (``--retune``, ``--fit-gate``) written to ``out``, with the
    other's ``.json`` and ``fields`` beside it; each whole or not at all."""
    from msj_gym.agents.checkpoint import write_checkpoint

    meta.update(fields)
    write_checkpoint(model, out, meta)
    log(f"{what} -> {out}")
    return out


def gate_table(task: dict[str, Any]) -> dict[str, Any]:
    """On a chunk of systems (a worker's unit of work), through the env on the same seeds (the same
    jobs): the agent's mean response time as it stands, and its selected base's, followed throughout,
    each run counted as :func:`run_mean` counts it with ``flagged`` false. With each system's first
    observation."""
    import gymnasium as gym

    import msj_gym  # noqa: F401  (registers the envs)

    systems, seeds, arrivals, kwargs = task["systems"], task["seeds"], task["arrivals"], task["env_kwargs"]
    env = gym.make("MSJ-v0", scenario=systems[0], num_arrivals=100, **kwargs)
    model = _policy_from_state(task["agent"], env)
    agent = agent_means(model, systems, seeds, arrivals, kwargs, flagged=False)
    model.policy.mlp_extractor.follow_bias.fill_(1e6)
    follow = agent_means(model, systems, seeds, arrivals, kwargs, flagged=False)
    obs = []
    for w in systems:
        first, _ = gym.make("MSJ-v0", scenario=w, num_arrivals=100, **kwargs).reset(seed=0)
        obs.append(first)
    return {"agent": agent, "follow": follow, "obs": np.array(obs)}


GATE_CHUNK = 8  # systems per gate task: the agent's envs of a chunk step together, one batch per step


def _fit_gate(args: argparse.Namespace, select: list[Any], seeds: list[int], table: dict, t0: float) -> Path:
    """``--fit-gate``: the checkpoint's network, unchanged, with a gate fitted on ``--gate-systems``
    generated systems (apart from the training and selection ones): on each, the agent as it stands
    (its guard and follow bias) against its selected base followed throughout, ``--select-seeds``
    runs of ``--select-arrivals`` arrivals each. Kept if its cross-validated excess on those systems
    is below always trusting the network and, on the selection systems, the gated agent is within
    :data:`GATE_SELECTION_TOLERANCE` of the agent (the geometric mean of its mean response time over the
    agent's, the same runs: a check that it breaks nothing there, where it mostly trusts the network);
    written to ``--out`` with its ``.json``."""
    import gymnasium as gym

    from msj_gym.agents.checkpoint import load_model
    from msj_gym.workloads.generator import sample_systems

    meta = json.loads(args.fit_gate.with_suffix(".json").read_text())
    kwargs = meta["env_kwargs"]
    old: Any = load_model(args.fit_gate, algo="maskable-ppo")
    if getattr(old.policy.mlp_extractor, "gated", False):
        raise ValueError(
            f"--fit-gate: {str(args.fit_gate)!r} has a gate already; give the checkpoint without it"
        )
    systems = sample_systems(args.seed + 30_000, args.gate_systems)
    table_g = _gate_systems_table(args, old, kwargs, systems, t0)
    agent, followed, obs = table_g["agent"], table_g["follow"], table_g["obs"]
    # in logarithms, as the selection ratio (a geometric mean) counts them: a run-away agent costs
    # log 10 against the 10 of a plain excess, which would otherwise outweigh any number of gains
    excess = np.log1p(excess_of(np.stack([agent, followed], axis=1), cap=9.0))
    log(
        f"gate systems: the agent is better than its followed base on {int((excess[:, 1] > 0).sum())}, "
        f"worse on {int((excess[:, 0] > 0).sum())} of {len(excess)} (mean log excess: agent "
        f"{excess[:, 0].mean():.4f}, following {excess[:, 1].mean():.4f})"
    )
    env = gym.make("MSJ-v0", scenario=systems[0], **kwargs)
    model, lean, held_out = _gated(args, old, env, obs, excess)
    score, before, after = _gate_on_selection(args, old, model, select, seeds, kwargs, table)
    if not (held_out < excess[:, 0].mean() and score < GATE_SELECTION_TOLERANCE):
        log(
            "the gate is not kept (it must lower the cross-validated excess and stay within "
            f"{GATE_SELECTION_TOLERANCE - 1:.0%} of the agent on the selection systems): nothing written"
        )
        return args.fit_gate
    return _write_derived(
        model,
        args.out,
        meta,
        "gated",
        gate_systems=args.gate_systems,
        gate_lean=lean,
        selection_ratio_without_gate=round(before, 5),
        selection_ratio_to_best_base=round(after, 5),
        gate_selection_ratio_to_ungated=round(score, 5),
        gate_cross_validated_excess=round(held_out, 5),
        gate_excess_trusting_network=round(float(excess[:, 0].mean()), 5),
        gate_fitted_by="python -m msj_gym.agents.generalist " + " ".join(sys.argv[1:]),
        gate_wall_seconds=round(time.perf_counter() - t0, 1),
    )


def _gate_policy_kwargs(old: Any) -> dict[str, Any]:
    """The network settings of checkpoint ``old`` that a gated twin keeps (the gate is new)."""
    return {
        k: v
        for k, v in old.policy_kwargs.items()
        if k in ("hidden", "attention_layers", "heads", "simulated_selection")
    }


def _gate_systems_table(
    args: argparse.Namespace, old: Any, kwargs: dict[str, Any], systems: list[Any], t0: float
) -> dict[str, np.ndarray]:
    """The gate's table (:func:`gate_table` over ``systems``, in chunks of :data:`GATE_CHUNK`): read
    from ``--data`` if made for the same checkpoint, systems, runs and code, else made and kept there."""
    from msj_gym.agents._cli import read_round, write_round
    from msj_gym.agents.evaluate import code_stamp
    from msj_gym.experiments.runner import map_unordered

    state = {"policy_kwargs": _gate_policy_kwargs(old), "weights": old.policy.state_dict()}
    gate_seeds = [2 * 10**6 + s for s in range(args.select_seeds)]  # apart from every other seed
    tasks = [
        {
            "index": i,
            "systems": systems[i : i + GATE_CHUNK],
            "seeds": gate_seeds,
            "arrivals": args.select_arrivals,
            "env_kwargs": kwargs,
            "agent": state,
        }
        for i in range(0, len(systems), GATE_CHUNK)
    ]
    # what the table depends on: the checkpoint's weights, the systems, the runs, the code
    key = json.dumps(
        {
            "agent": _weights_digest(old),
            "kwargs": kwargs,
            "systems": [args.seed, args.gate_systems],
            "seeds": gate_seeds,
            "arrivals": args.select_arrivals,
            "code": code_stamp(Path(__file__), Path(__file__).with_name("set_policy.py")),
        },
        default=str,
    )
    cached = None if args.data is None else args.data / "gate-table.npz"
    table_g = read_round(cached, key)
    if table_g is not None:
        log(f"gate: the table of {len(table_g['agent'])} systems from {cached}")
        return table_g
    parts = []
    done = map_unordered(gate_table, tasks, args.backend, args.workers, args.address)
    for n, (task, got) in enumerate(done):
        parts.append((task["index"], got))
        log(f"gate: {n + 1}/{len(tasks)} chunks of systems ({time.perf_counter() - t0:.0f} s)")
    parts.sort(key=lambda x: x[0])
    table_g = {name: np.concatenate([g[name] for _, g in parts]) for name in ("agent", "follow", "obs")}
    write_round(cached, key, table_g)
    return table_g


def _gated(
    args: argparse.Namespace, old: Any, env: Any, obs: np.ndarray, excess: np.ndarray
) -> tuple[Any, float, float]:
    """``old`` with a gate fitted on every gate system, leaning towards following (the safe side) by
    what a 4-fold cross-validation finds best, as the selector's lean. Returns the gated model, its
    lean and its cross-validated mean excess."""
    import torch
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy, fit_head

    policy_kwargs = _gate_policy_kwargs(old)

    def gated(idx: np.ndarray, seed: int) -> Any:
        model = MaskablePPO(
            ClassSetMaskablePolicy,
            env,
            seed=seed,
            policy_kwargs={**policy_kwargs, "gate": True},
            device="cpu",
        )
        missing, unexpected = model.policy.load_state_dict(old.policy.state_dict(), strict=False)
        assert not unexpected and all(".gate" in k for k in missing), (missing, unexpected)
        fit_head(model.policy, "gate", obs[idx], excess[idx], epochs=200, lr=1e-3, temperature=0.1, seed=seed)
        return model

    def logits_of(model: Any, idx: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model.policy.mlp_extractor.gate_logits(torch.as_tensor(obs[idx])).numpy()

    order = np.random.default_rng(args.seed).permutation(len(excess))
    lean, held_out = cross_validated_lean(
        lambda idx, f: gated(idx, args.seed + f), logits_of, excess, 1, order
    )
    model = gated(order, args.seed + 4)
    model.policy.mlp_extractor.gate_bias[1] = lean
    with torch.no_grad():
        trust = model.policy.mlp_extractor.gate_logits(torch.as_tensor(obs)).argmax(dim=1).numpy() == 0
    log(
        f"gate: leans {lean:g} towards following (cross-validated mean excess "
        f"{held_out:.4f}, against {excess[:, 0].mean():.4f} always trusting the network); "
        f"trusts the network on {int(trust.sum())} of {len(trust)} gate systems"
    )
    return model, lean, held_out


def _gate_on_selection(
    args: argparse.Namespace,
    old: Any,
    model: Any,
    select: list[Any],
    seeds: list[int],
    kwargs: dict[str, Any],
    table: dict,
) -> tuple[float, float, float]:
    """The gated ``model`` against ``old`` on the selection systems, the same runs, unflagged as the
    table: the geometric mean of its mean response time over the agent's, and the ratios to the best
    base without the gate and with it."""
    import torch

    plain = agent_means(old, select, seeds, args.select_arrivals, kwargs, flagged=False)
    means_gated = agent_means(model, select, seeds, args.select_arrivals, kwargs, flagged=False)
    with np.errstate(invalid="ignore"):  # both unstable: the same (1)
        ratio = np.where(np.isinf(means_gated) & np.isinf(plain), 1.0, means_gated / plain)
    score = float(np.exp(np.mean(np.log(np.clip(ratio, 0.1, 10.0)))))
    best = table["means"].min(axis=1)
    before, after = selection_score(plain, best), selection_score(means_gated, best)
    with torch.no_grad():
        x = torch.as_tensor(table["obs"], dtype=torch.float32)
        trusted = int((model.policy.mlp_extractor.gate_logits(x).argmax(dim=1) == 0).sum())
    log(
        f"selection systems: the gated agent's mean response time over the agent's {score:.4f} (geometric "
        f"mean; trusts the network on {trusted} of {len(select)}); ratio to the best base {after:.4f} with "
        f"the gate, {before:.4f} without"
    )
    return score, before, after


SELECT_BIASES = (0.0, 0.5, 1.0, 2.0, 3.0)

#: how much worse than the plain agent a gated one may be on the selection systems and still be kept
#: (a geometric-mean ratio): 30 systems on which the gate mostly trusts the network cannot show a gain
#: of the size its cross-validation measures on hundreds
GATE_SELECTION_TOLERANCE = 1.01


def cross_validated_lean(
    fitted: Any, logits_of: Any, excess: np.ndarray, column: int, order: np.ndarray
) -> tuple[float, float]:
    """The lean towards choice ``column`` (one of :data:`SELECT_BIASES`, added to its logit) that a
    4-fold cross-validation over the systems finds best: ``fitted(idx, fold)`` fits a head on the
    systems ``idx``, ``logits_of(model, idx)`` are its logits on the systems ``idx``, and ``excess[i,
    j]`` is what choice ``j`` costs on system ``i``; ``order`` (a permutation of the systems) deals them
    into the folds. Returns the lean and its cross-validated mean excess."""
    totals = np.zeros(len(SELECT_BIASES))
    for f in range(4):
        held = order[f::4]
        logits = logits_of(fitted(np.setdiff1d(order, held), f), held)
        for b, bias in enumerate(SELECT_BIASES):
            lean = logits.copy()
            lean[:, column] += bias
            totals[b] += excess[held, lean.argmax(axis=1)].sum()
    best = int(np.argmin(totals))
    return SELECT_BIASES[best], float(totals[best] / len(excess))


def _selector(
    env: Any, policy_kwargs: dict[str, Any], obs: np.ndarray, excess: np.ndarray, seed: int
) -> tuple[Any, float, tuple[int, float, float]]:
    """The selector fitted on every system, with the lean towards the safest base (the one with the
    least mean excess over all systems) that a 4-fold cross-validation finds best. Returns the model
    holding it, its mean excess on its own systems, and ``(safest base, lean, cross-validated
    excess)``."""
    import torch
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.set_policy import ClassSetMaskablePolicy, fit_head

    def fitted(idx: np.ndarray, fold: int) -> Any:
        model = MaskablePPO(
            ClassSetMaskablePolicy, env, seed=seed + fold, policy_kwargs=policy_kwargs, device="cpu"
        )
        fit_head(
            model.policy,
            "selector",
            obs[idx],
            excess[idx],
            epochs=200,
            lr=1e-3,
            temperature=0.1,
            seed=seed + fold,
        )
        return model

    def logits_of(model: Any, idx: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model.policy.mlp_extractor.selector_logits(torch.as_tensor(obs[idx])).numpy()

    safest = int(np.argmin(excess.mean(axis=0)))
    order = np.random.default_rng(seed).permutation(len(excess))
    lean, held_out = cross_validated_lean(fitted, logits_of, excess, safest, order)
    model = fitted(order, 4)
    model.policy.mlp_extractor.select_bias[safest] = lean
    chosen = logits_of(model, np.arange(len(excess))).argmax(axis=1)
    own = float(excess[np.arange(len(excess)), chosen].mean())
    return model, own, (safest, lean, held_out)


def _base_tables(
    args: argparse.Namespace, kwargs: dict[str, Any], group: list[Any], seeds: list[int]
) -> dict[str, np.ndarray]:
    """Each base's mean response time on each system of ``group`` (``--select-arrivals`` runs of
    ``seeds``), and each system's observation."""
    from msj_gym.experiments.runner import map_unordered

    tasks = [
        {
            "index": i,
            "system": w,
            "bases": args.bases,
            "seeds": seeds,
            "arrivals": args.select_arrivals,
            "env_kwargs": kwargs,
        }
        for i, w in enumerate(group)
    ]
    done = sorted(
        map_unordered(base_table, tasks, args.backend, args.workers, args.address),
        key=lambda x: x[0]["index"],
    )
    return {
        "means": np.array([d["means"] for _, d in done]),
        "obs": np.array([d["obs"] for _, d in done]),
    }


@dataclass
class _Training:
    """What every round of a training run shares: its settings, env, systems and selection runs."""

    args: argparse.Namespace
    kwargs: dict[str, Any]
    env: Any
    policy_kwargs: dict[str, Any]
    systems: list[Any]
    best_train: np.ndarray  # each training system's best base
    select: list[Any]
    select_seeds: list[int]
    best: np.ndarray  # the best base's mean response time on each selection system
    selector_weights: dict[str, Any]  # the selector head every candidate starts with
    t0: float


def _fit_selector_head(
    args: argparse.Namespace,
    env: Any,
    policy_kwargs: dict[str, Any],
    tables: dict[str, dict[str, np.ndarray]],
) -> dict[str, Any]:
    """The selector (which base to follow on a system, from what the system is), fitted once on the
    training and selector systems' tables and shared by every candidate: its weights."""
    import torch

    train_table, extra_table, select_table = tables["train"], tables["extra"], tables["select"]
    obs = np.concatenate([train_table["obs"], extra_table["obs"]])
    excess = excess_of(np.concatenate([train_table["means"], extra_table["means"]]))
    selector, fitted_excess, lean = _selector(env, policy_kwargs, obs, excess, args.seed)
    log(
        f"selector: leans {lean[1]:g} towards {args.bases[lean[0]]} "
        f"(cross-validated mean excess {lean[2]:.4f})"
    )
    with torch.no_grad():
        x = torch.as_tensor(select_table["obs"], dtype=torch.float32)
        chosen = selector.policy.mlp_extractor.selector_logits(x).argmax(dim=1).numpy()
    held_out = excess_of(select_table["means"])
    log(
        f"selector: mean excess of the chosen base {fitted_excess:.4f} on the systems it was fitted on, "
        f"{held_out[np.arange(len(held_out)), chosen].mean():.4f} on the selection systems "
        f"(picks {[args.bases[j] for j in chosen]})"
    )
    return {k: v.clone() for k, v in selector.policy.state_dict().items() if ".select" in k}


def _round_key(args: argparse.Namespace) -> str:
    """What a round's decisions depend on: the code, the systems, their best bases (from the tables),
    the sampling, and from round 2 the network that drives the episodes (its weights, added per round:
    whatever chose it, e.g. --candidates or the selection settings). The following's tuning, after
    every round, not."""
    from msj_gym.agents.evaluate import code_stamp

    collecting = (
        "seed", "systems", "select_seeds", "select_arrivals", "bases", "sizes", "decisions",
        "episode_arrivals", "skip", "tail", "sample_every", "explore", "persist", "play_out",
        "wide_weight",
    )  # fmt: skip
    return json.dumps(
        {k: getattr(args, k) for k in sorted(collecting)} | {"code": code_stamp(Path(__file__))}, default=str
    )


def _collect_round(run: _Training, r: int, model: Any) -> dict[str, np.ndarray]:
    """Round ``r``'s compared decisions on the training systems, the episodes driven by the bases
    (``model`` None) or by ``model``, in ``--workers`` processes (or on Ray)."""
    from msj_gym.experiments.runner import map_unordered

    args, t1 = run.args, time.perf_counter()
    follow = None
    if model is not None:
        follow = {"policy_kwargs": run.policy_kwargs, "weights": model.policy.state_dict()}
    parts = []
    tasks = _round_tasks(args, run.systems, run.best_train, r, follow)
    for i, (_, got) in enumerate(
        map_unordered(collect_system, tasks, args.backend, args.workers, args.address)
    ):
        parts.append(got)
        if (i + 1) % max(1, len(tasks) // 8) == 0:
            log(f"round {r + 1}: {i + 1}/{len(tasks)} systems ({time.perf_counter() - t1:.0f} s)")
    parts.sort(key=lambda p: int(p["system"][0]) if len(p["system"]) else -1)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _fit_candidates(
    run: _Training, r: int, train: dict[str, np.ndarray], model: Any, score: float
) -> tuple[Any, float]:
    """Round ``r``'s ``--candidates`` fits on ``train``, each scored on the selection systems; returns
    the best of them and ``model`` (the fit kept so far, ``score`` its ratio) with its ratio."""
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.improve import fit
    from msj_gym.agents.set_policy import ClassSetMaskablePolicy

    args, best = run.args, run.best
    for c in range(args.candidates):
        seed = args.seed * 1000 + r * 100 + c
        entropy = (0.01, 0.003, 0.03)[c % 3]
        candidate = MaskablePPO(
            ClassSetMaskablePolicy,
            run.env,
            seed=seed,
            policy_kwargs=run.policy_kwargs,
            device="cpu",
            verbose=0,
        )
        candidate.policy.load_state_dict(run.selector_weights, strict=False)
        fitted = fit(candidate, train, args, seed, 0, entropy)
        means = agent_means(candidate, run.select, run.select_seeds, args.select_arrivals, run.kwargs)
        got = selection_score(means, best)
        ratios = " ".join(f"{m / b:.2f}" if np.isfinite(m) else "U" for m, b in zip(means, best, strict=True))
        log(f"  per selection system, mean response time over the best base's (U: unstable): {ratios}")
        log(
            f"round {r + 1}, fit {c + 1} (entropy {entropy}): {len(train['cost'])} decisions, held-out "
            f"regret {fitted['val_regret']:.3f}, selection ratio to the best base {got:.4f}, "
            f"{time.perf_counter() - run.t0:.0f} s"
        )
        # no selection system with a stable base ranks no fit: the latest (on the most data) is kept
        if model is None or math.isnan(got) or got < score:
            model, score = candidate, got
    return model, score


def _improve(run: _Training) -> tuple[Any, float, dict[str, np.ndarray], float]:
    """The rounds of rollout improvement: each collects its compared decisions (or reads them from
    ``--data``) and fits candidates on every round's decisions so far. Returns the kept fit, its
    selection ratio, the decisions and the seconds spent collecting."""
    from msj_gym.agents._cli import read_round, write_round
    from msj_gym.agents.checkpoint import save_model
    from msj_gym.atomic import atomic_path

    args, key = run.args, _round_key(run.args)
    data: dict[str, np.ndarray] | None = None
    model, score, t_collect = None, math.inf, 0.0
    for r in range(args.rounds):
        cached = None if args.data is None else args.data / f"round-{r + 1}.npz"
        round_key = f"{key}/{r}" if model is None else f"{key}/{r}/{_weights_digest(model)}"
        part = read_round(cached, round_key)
        if part is not None:
            log(f"round {r + 1}: {len(part['cost'])} compared decisions from {cached}")
        else:
            t1 = time.perf_counter()
            part = _collect_round(run, r, model)
            t_collect += time.perf_counter() - t1
            write_round(cached, round_key, part)
        data = part if data is None else {k: np.concatenate([data[k], part[k]]) for k in data}
        train = _normalise(data)
        train["base"] = np.full(len(train["cost"]), -1, dtype=np.int64)
        model, score = _fit_candidates(run, r, train, model, score)
        assert model is not None  # --candidates is at least 1 (parse_args)
        log(f"round {r + 1}: kept selection ratio {score:.4f}")
        if args.data is not None:  # each round's kept fit, to look at or to start from
            with atomic_path(args.data / f"round-{r + 1}.zip") as tmp:
                save_model(model, tmp)
    assert model is not None and data is not None  # --rounds is at least 1 (parse_args)
    return model, score, data, t_collect


def _tune(
    args: argparse.Namespace,
    model: Any,
    score: float,
    select: list[Any],
    seeds: list[int],
    kwargs: dict[str, Any],
    best: np.ndarray,
) -> tuple[float, float | None, float | None, float]:
    """:func:`tune_following` over the biases and guards of ``--follow-biases``, ``--guard-ages`` and
    ``--guard-queues``, on ``--select-arrivals`` runs."""
    return tune_following(
        model,
        score,
        select,
        seeds,
        args.select_arrivals,
        kwargs,
        best,
        args.follow_biases,
        args.guard_ages,
        args.guard_queues,
    )


def _derive(
    args: argparse.Namespace,
    kwargs: dict[str, Any],
    select: list[Any],
    select_seeds: list[int],
    extra: list[Any],
    table_seeds: list[int],
    t0: float,
) -> Path:
    """``--retune``, ``--fit-gate`` or ``--simulate-selection``: a new checkpoint around a trained one's
    network, with what ``--trust-pickle`` and ``--trust-imports`` grant."""
    with _trusted(args):
        table = _base_tables(args, kwargs, select, select_seeds)
        if args.retune is not None:
            return _retune(args, select, select_seeds, table, t0)
        if args.fit_gate is not None:
            return _fit_gate(args, select, select_seeds, table, t0)
        extra_table = _base_tables(args, kwargs, extra, table_seeds)
        return _simulate_selection(args, select, select_seeds, table, extra_table, t0)


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    import gymnasium as gym
    import torch

    import msj_gym
    from msj_gym.agents.checkpoint import write_checkpoint
    from msj_gym.workloads.generator import sample_systems

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)  # small networks: more threads only contend with the workers
    t0 = time.perf_counter()
    kwargs = env_kwargs(args.sizes, args.bases)
    systems = sample_systems(args.seed, args.systems)
    select = sample_systems(args.seed + 10_000, args.select_systems)
    extra = sample_systems(args.seed + 20_000, args.selector_systems)
    select_seeds = [int(s) for s in np.random.SeedSequence([args.seed, 99]).generate_state(args.select_seeds)]
    table_seeds = [10**6 + s for s in range(args.select_seeds)]  # apart from every episode's seeds
    if args.retune is not None or args.fit_gate is not None or args.simulate_selection is not None:
        return _derive(args, kwargs, select, select_seeds, extra, table_seeds, t0)
    tables = {
        "train": _base_tables(args, kwargs, systems, table_seeds),
        "extra": _base_tables(args, kwargs, extra, table_seeds),
        "select": _base_tables(args, kwargs, select, select_seeds),
    }
    best = tables["select"]["means"].min(axis=1)
    log(
        f"{len(systems)} training systems, {len(select)} selection systems, {len(extra)} more for the "
        f"selector: each base's mean response time ({time.perf_counter() - t0:.0f} s)"
    )
    if not np.isfinite(best).any():
        log(
            f"note: no base is stable on any selection system over {args.select_arrivals} arrivals "
            "(--select-arrivals): the fits are not ranked, the latest is kept"
        )
    env = gym.make("MSJ-v0", scenario=systems[0], **kwargs)
    policy_kwargs = {"hidden": args.hidden}
    run = _Training(
        args=args,
        kwargs=kwargs,
        env=env,
        policy_kwargs=policy_kwargs,
        systems=systems,
        best_train=np.argmin(tables["train"]["means"], axis=1),
        select=select,
        select_seeds=select_seeds,
        best=best,
        selector_weights=_fit_selector_head(args, env, policy_kwargs, tables),
        t0=t0,
    )
    model, score, data, t_collect = _improve(run)
    chosen_bias, chosen_age, chosen_queue, score = _tune(
        args, model, score, select, select_seeds, kwargs, best
    )
    wall = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": "python -m msj_gym.agents.generalist " + " ".join(sys.argv[1:] if argv is None else argv),
        "algo": "maskable-ppo",
        "method": "rollout-improvement over a distribution of systems",
        "bases": list(args.bases),
        "rounds": args.rounds,
        "env_id": "MSJ-v0",
        "env_kwargs": kwargs,
        "training_systems": args.systems,
        "decisions": len(data["cost"]),
        "seed": args.seed,
        "selection_ratio_to_best_base": None if math.isnan(score) else round(score, 5),
        "follow_bias": chosen_bias,
        "follow_when_older_than_mean_durations": chosen_age,
        "follow_when_queue_over_k": chosen_queue,
        "collect_wall_seconds": round(t_collect, 1),
        "train_wall_seconds": round(wall, 1),
        "msj_gym_version": msj_gym.__version__,
    }
    write_checkpoint(model, args.out, meta)
    log(f"generalist: {len(data['cost'])} decisions, {wall:.0f} s -> {args.out}")
    return args.out


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    sys.exit(run_script("python -m msj_gym.agents.generalist", main))
