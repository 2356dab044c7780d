"""Train a learned scheduler on an MSJ environment with stable-baselines3.

    python -m msj_gym.agents.train --algo maskable-ppo --scenario sf-fig2 --load 0.7 \\
        --timesteps 300000 --seed 0 --out agents/checkpoints/maskable-ppo-sf-fig2-0.7.zip

Algorithms: ``ppo`` and ``dqn`` (stable-baselines3; the env treats an action its mask rules out as
"wait") and ``maskable-ppo`` (sb3-contrib; only valid actions are ever sampled). With ``--imitate
POLICY`` MaskablePPO first clones a baseline's decisions through the env (behaviour cloning), then
improves on them by RL. The command line that produced a checkpoint is saved next to it
(``<out>.json``) with the run's settings.

Besides the MSJ envs, ``--env-id MSJMoldable-v0`` (a moldable loss system, ``--scenario
002-SPEEDUP-REGIME`` with ``--k`` servers, ``--blocking-cost``) and ``--env-id CompatAssign-v0``
(choosing the servers of each job on a compatibility graph, ``--scenario 003-...`` at ``--load``).
Comma lists ``--scenario A,B``, ``--load 0.7,0.9`` and ``--k 100,1000`` train one agent on every
combination, a system drawn per episode (:class:`msj_gym.agents.systems_env.SystemsEnv`); they must
share the env's spaces. ``--imitate`` takes a policy of the env's model (``compat-least-loaded``,
``moldable-p-scheme``, ...).

``--vec-env native`` trains on the native batched vector env (:class:`msj_gym.agents.vec_env.MSJSB3VecEnv`:
all ``--n-envs`` simulators stepped in one compiled call) instead of SB3's ``DummyVecEnv`` of single
envs; environment ``i`` gets the same seeds and trajectories either way.

Progress (the decisions collected for ``--imitate``, then the training steps, each with its rate and
ETA) is drawn on stderr; ``--no-progress`` turns it off.

**Recipes.** ``--recipe NAME`` reads the hyperparameters of a shipped recipe
(``agents/recipes/NAME.toml``, found by name from any folder; ``--recipe PATH.toml`` reads a
file of your own): each key is a flag of this command (its name with underscores), and a flag given on
the command line overrides the recipe's value. ``--out`` defaults to ``NAME.zip`` in the current
folder. ``python -m msj_gym.agents.train --list-recipes`` lists the shipped ones.

**Average cost.** ``--average-reward`` (differential rewards, :mod:`msj_gym.agents.average_reward`),
``--lyapunov-weight`` (the stabilising cost shaping of :class:`~msj_gym.env.wrappers.LyapunovShaping`)
and ``--cost-scale service-time`` (:class:`~msj_gym.env.wrappers.CostScale`) wrap the training envs;
the agent's own env (its ``.json``) is the unwrapped one, so that it is evaluated on the true cost.

**Learning curve.** ``--eval-every N`` evaluates the greedy policy every ``N`` environment steps on
held-out episodes (``--eval-seeds``, ``--eval-arrivals``; across generated systems, on
``--eval-systems`` systems that training never draws) and appends each point to ``<out
stem>-curve.jsonl`` (:mod:`msj_gym.agents.learning_curve`); ``--keep best`` saves the checkpoint of
the curve's best point as ``--out`` (the last one beside it as ``<out stem>-last.zip``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ALGOS = ("ppo", "maskable-ppo", "dqn")


MODEL_ENVS = ("MSJMoldable-v0", "CompatAssign-v0")  # the other models' envs (not MSJ queues)
ENV_IDS = ("MSJ-v0", "MSJPreemptive-v0", *MODEL_ENVS)


def training_systems(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The systems of the comma lists ``--scenario``, ``--load`` and ``--k`` (every combination), each
    as the env keywords that set it; one system when no list has two items."""
    out: list[dict[str, Any]] = []
    for scenario in args.scenarios:
        for load in args.loads or [None]:
            for k in args.ks or [None]:
                system: dict[str, Any] = {"scenario": scenario}
                if load is not None:
                    system["load"] = load
                if k is not None:
                    system["num_servers"] = k
                out.append(system)
    return out


def make_env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The environment every worker gets: the same keywords at training and evaluation time (with
    several training systems, the first one's)."""
    kwargs: dict[str, Any] = {**training_systems(args)[0], "num_arrivals": args.episode_arrivals}
    if args.env_id == "MSJMoldable-v0":
        if args.reward != "mean":
            kwargs["reward"] = "total"
        if args.blocking_cost != 2.0:
            kwargs["blocking_cost"] = args.blocking_cost
        return kwargs
    if args.reward != "integral":
        kwargs["reward"] = args.reward
    if args.env_id == "CompatAssign-v0":
        return kwargs
    if args.queue_window != 1:
        kwargs["queue_window"] = args.queue_window
    if args.obs_jobs != 8:
        kwargs["obs_jobs"] = args.obs_jobs
    if args.env_id == "MSJPreemptive-v0" and args.preempt_window != 4:
        kwargs["preempt_window"] = args.preempt_window
    if args.observation != "flat":
        kwargs["observation"] = args.observation
        if args.observation == "classes":
            kwargs.pop("obs_jobs", None)
    if args.actions != "jobs":
        kwargs["actions"] = args.actions
    if args.advisor:
        kwargs["advisor"] = list(args.advisor)
    return kwargs


def build_model(algo: str, env: Any, seed: int, args: argparse.Namespace) -> Any:
    """An untrained model with small networks: the observation is a few dozen numbers."""
    learning_rate: Any = args.learning_rate
    if args.lr_schedule == "linear":  # SB3 calls it with the progress remaining, from 1 down to 0

        def learning_rate(remaining: float) -> float:
            return args.learning_rate * remaining

    common = {"seed": seed, "gamma": args.gamma, "learning_rate": learning_rate, "verbose": 0}
    common["policy_kwargs"] = {"net_arch": list(args.net_arch)}
    policy: Any = "MlpPolicy"
    if args.policy == "class-set":  # the equivariant network over the class set (msj_gym.agents.set_policy)
        from msj_gym.agents.set_policy import ClassSetMaskablePolicy, ClassSetPolicy

        policy = ClassSetMaskablePolicy if algo == "maskable-ppo" else ClassSetPolicy
        common["policy_kwargs"] = {"hidden": args.net_arch[0]}
    if algo in ("ppo", "maskable-ppo"):
        Algo: Any  # MaskablePPO or PPO, which take the same arguments here
        if algo == "maskable-ppo":
            from sb3_contrib import MaskablePPO as Algo
        else:
            from stable_baselines3 import PPO as Algo
        return Algo(
            policy,
            env,
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.n_epochs,
            gae_lambda=args.gae_lambda,
            ent_coef=args.ent_coef,
            **common,
        )
    from stable_baselines3 import DQN

    return DQN(
        "MlpPolicy", env, learning_starts=min(1000, args.timesteps // 10), buffer_size=100_000, **common
    )


def checkpoint_callback(every: int, folder: Path, algo: str, meta: dict[str, Any]) -> Any:
    """An SB3 callback that writes the model every ``every`` calls to ``folder/model_N_steps.zip`` (N:
    the timesteps so far) in the data-only form (:mod:`msj_gym.agents.checkpoint`), each whole or not
    at all, with ``meta`` (the run's env keywords and settings) as the ``.json`` beside it, so that
    each is an agent ``--agent`` loads."""
    from stable_baselines3.common.callbacks import BaseCallback

    from msj_gym.agents.checkpoint import write_checkpoint

    class DataOnlyCheckpoints(BaseCallback):
        def _on_step(self) -> bool:
            if self.n_calls % every == 0:
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"model_{self.num_timesteps}_steps.zip"
                write_checkpoint(self.model, path, {**meta, "steps": self.num_timesteps}, algo)
            return True

    return DataOnlyCheckpoints()


class _Bar:
    """A tqdm bar on stderr (tqdm is a core dependency), or nothing with ``--no-progress``."""

    def __init__(self, total: int, desc: str, unit: str, show: bool) -> None:
        from tqdm import tqdm

        tty = sys.stderr.isatty()
        # as the leaderboard's bar: a line every 10 s when stderr is a log file, not one per update
        self.bar = tqdm(
            total=total,
            desc=desc,
            unit=unit,
            file=sys.stderr,
            mininterval=0.5 if tty else 10.0,
            dynamic_ncols=tty,
            disable=not show,
        )

    def update(self, n: int) -> None:
        self.bar.update(max(0, min(n, self.bar.total - self.bar.n)))  # SB3 may overshoot the total

    def close(self) -> None:
        self.bar.close()


def progress_callback(total: int, show: bool = True) -> Any:
    """An SB3 callback drawing the training steps with their rate and ETA. Not SB3's own
    ``progress_bar=True``: that one draws with rich, which only the ``rl`` extra installs."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = _Bar(total, "training", "step", show)

        def _on_step(self) -> bool:
            self.bar.update(self.training_env.num_envs)
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    return Progress()


def imitate(model: Any, args: argparse.Namespace, env_kwargs: dict[str, Any]) -> float:
    """Behaviour cloning before RL: fit the policy's action distribution to a baseline's actions
    (run through the env by PolicyAgent, on seeds no evaluation uses) by masked cross-entropy.
    Returns the final accuracy on the collected decisions."""
    import gymnasium as gym
    import numpy as np
    import torch

    systems = training_systems(args)
    if args.systems:  # the generated systems the training runs on, not the default scenario
        from msj_gym.agents.systems_env import SystemsEnv
        from msj_gym.workloads.generator import sample_systems

        base = {k: v for k, v in env_kwargs.items() if k not in ("scenario", "load", "num_servers")}
        env: Any = SystemsEnv(sample_systems(args.seed, args.systems), args.env_id, **base)
    elif len(systems) > 1:
        from msj_gym.agents.systems_env import SystemsEnv

        base = {k: v for k, v in env_kwargs.items() if k not in systems[0]}
        env = SystemsEnv(systems, args.env_id, **base)
    else:
        env = gym.make(args.env_id, **env_kwargs)
    observations: list[Any] = []
    masks: list[Any] = []
    actions: list[Any] = []
    seed = 10**6 + args.seed  # far from the evaluation seeds
    obs, info = env.reset(seed=seed)
    agent = imitation_agent(args.imitate, env)
    bar = _Bar(args.imitate_steps, f"collecting {args.imitate}'s decisions", "decision", args.progress)
    while len(actions) < args.imitate_steps:
        action, _ = agent.predict(obs) if agent is not None else (_advisor_action(env), None)
        observations.append(obs)
        masks.append(info["action_mask"])
        actions.append(action)
        bar.update(1)
        obs, _, _, truncated, info = env.step(action)
        if truncated:
            seed += 1
            obs, info = env.reset(seed=seed)
            agent = imitation_agent(args.imitate, env)
    bar.close()
    policy = model.policy
    obs_t = torch.as_tensor(np.array(observations), device=policy.device)
    mask_np = np.array(masks)
    act_t = torch.as_tensor(np.array(actions), device=policy.device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(args.seed)
    n = len(actions)
    for _ in range(args.imitate_epochs):
        for idx in torch.randperm(n, generator=gen).split(256):
            dist = policy.get_distribution(obs_t[idx], action_masks=mask_np[idx.numpy()])
            loss = -dist.log_prob(act_t[idx]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        dist = policy.get_distribution(obs_t, action_masks=mask_np)
        accuracy = float((dist.mode() == act_t).float().mean())
    return accuracy


def _advisor_action(env: Any) -> int:
    """The action that takes the env's first advisor's decision (``--imitate advisor``)."""
    inner = getattr(env, "current", env).unwrapped
    return int(inner.action_space.n - len(inner.advisors))


def imitation_agent(policy: str, env: Any) -> Any:
    """The agent that plays ``policy`` (a registered id of the env's model) through ``env`` (for a
    :class:`~msj_gym.agents.systems_env.SystemsEnv`, its current system's env); None for
    ``"advisor"``: the env's first advisor's own decisions, taken through its action."""
    if policy == "advisor":
        return None
    from msj_gym.env.compat_env import CompatAssignEnv
    from msj_gym.env.moldable_env import MoldablePolicyAgent, MSJMoldableEnv

    inner = getattr(env, "current", env).unwrapped
    if isinstance(inner, MSJMoldableEnv):
        return MoldablePolicyAgent(policy, inner)
    if isinstance(inner, CompatAssignEnv):
        from msj_gym.baselines import LeastLoadedAssignmentAgent
        from msj_gym.env.compat_env import DrawnAssignmentAgent

        agents = {"compat-least-loaded": LeastLoadedAssignmentAgent, "compat-fcfs": DrawnAssignmentAgent}
        if policy not in agents:
            raise ValueError(
                f"--imitate {policy!r}: CompatAssign-v0 plays the assignment of {', '.join(agents)}"
            )
        return agents[policy](inner)
    from msj_gym import PolicyAgent

    return PolicyAgent(policy, inner)


def reward_wrappers(args: argparse.Namespace, vector: bool = False) -> Any:
    """The wrapping of the training envs that ``--lyapunov-weight`` and ``--cost-scale`` ask for (the
    shaping inside, the scale outside it), as one function of an env; None when neither is asked."""
    if not args.lyapunov_weight and args.cost_scale == "none":
        return None
    from msj_gym.env import wrappers as w

    shaping, scale = (
        (w.LyapunovShapingVector, w.CostScaleVector) if vector else (w.LyapunovShaping, w.CostScale)
    )

    def wrap(env: Any) -> Any:
        if args.lyapunov_weight:
            env = shaping(env, weight=args.lyapunov_weight, power=args.lyapunov_power, of=args.lyapunov_of)
        if args.cost_scale != "none":
            env = scale(env, scale=args.cost_scale)
        return env

    return wrap


def value_warmup_callback(model: Any, steps: int) -> Any:
    """An SB3 callback that keeps the policy's own parameters fixed (no gradient) for the first
    ``steps`` environment steps, so that PPO's first updates fit the value function only: after a
    behaviour-cloning warm start, advantages from an untrained critic would move the cloned policy at
    random."""
    from stable_baselines3.common.callbacks import BaseCallback

    policy = model.policy
    own = [*policy.action_net.parameters()]
    extractor = getattr(policy, "mlp_extractor", None)
    if extractor is not None and hasattr(extractor, "policy_net"):
        own += list(extractor.policy_net.parameters())
    if not policy.share_features_extractor:
        own += list(policy.pi_features_extractor.parameters())

    class ValueWarmup(BaseCallback):
        def _on_training_start(self) -> None:
            for p in own:
                p.requires_grad_(False)

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            if self.num_timesteps >= steps:
                for p in own:
                    p.requires_grad_(True)

    return ValueWarmup()


class CurveCallback:
    """The learning curve of a run (``--eval-every``): the greedy policy's mean response time on
    held-out episodes, appended to ``<out stem>-curve.jsonl`` at the start, every ``--eval-every``
    steps and at the end. With ``--keep best`` each new best point is written to ``--out`` at once,
    with ``meta`` (the run's ``.json`` as known before training) marked incomplete, so that a run
    stopped early still has its kept point."""

    def __init__(
        self,
        args: argparse.Namespace,
        env_kwargs: dict[str, Any],
        training_systems: int,
        meta: dict[str, Any],
    ) -> None:
        from msj_gym.agents.learning_curve import CurveWriter, Episodes

        self.args = args
        if args.systems:
            from msj_gym.workloads.generator import sample_systems

            # systems no training run draws: training takes sample_systems(seed, n), whose system i is
            # child i of the seed; these are children of another root
            held_out = sample_systems(HELD_OUT_SYSTEMS_SEED + args.seed, args.eval_systems)
            systems: list[dict[str, Any]] = [{"scenario": wl} for wl in held_out]
        else:
            systems = training_systems_of(args)
        self.episodes = Episodes(systems, args.eval_seed_list, args.eval_arrivals, env_kwargs)
        self.path = args.out.with_name(args.out.stem + "-curve.jsonl")
        described = [_describe(s) for s in systems]
        header = {
            "out": args.out.name,
            "recipe": args.recipe,
            "seed": args.seed,
            "systems": described,
            "eval_seeds": args.eval_seed_list,
            "eval_arrivals": args.eval_arrivals,
        }
        self.writer = CurveWriter(self.path, header)
        self.best: dict[str, Any] | None = None
        self.meta = meta
        self.eval_seconds = 0.0
        self._next = 0

    def evaluate(self, model: Any, steps: int) -> dict[str, Any]:
        import torch

        from msj_gym.agents.learning_curve import evaluate_greedy, summarise_episodes

        def act(obs: Any, masks: Any) -> Any:
            with torch.no_grad():
                return model.predict(obs, deterministic=True, **_mask_kwargs(model, masks))[0]

        t0 = time.perf_counter()
        rows = evaluate_greedy(act, self.episodes, self.args.env_id)
        self.eval_seconds += time.perf_counter() - t0
        row = self.writer.add(
            steps, summarise_episodes(rows), eval_seconds=round(time.perf_counter() - t0, 1)
        )
        value = summarise_episodes(rows)["mean_response_time"]
        if self.best is None or value < self.best["mean_response_time"]:
            self.best = {**row, "mean_response_time": value}
            if self.args.keep == "best":
                from msj_gym.agents.checkpoint import write_checkpoint

                meta = {**self.meta, "kept": {"steps": steps, "curve_value": value}, "complete": False}
                write_checkpoint(model, self.args.out, meta, self.args.algo)
        return row

    def callback(self) -> Any:
        from stable_baselines3.common.callbacks import BaseCallback

        outer = self
        every = self.args.eval_every

        class Curve(BaseCallback):
            def _on_training_start(self) -> None:
                outer.evaluate(self.model, self.num_timesteps)
                outer._next = self.num_timesteps + every

            def _on_rollout_end(self) -> None:
                # between rollouts: the policy evaluated is the one the next rollout follows
                if self.num_timesteps >= outer._next:
                    outer.evaluate(self.model, self.num_timesteps)
                    outer._next += every * max(1, (self.num_timesteps - outer._next) // every + 1)

            def _on_step(self) -> bool:
                return True

        return Curve()

    def final(self, model: Any) -> None:
        """The curve's last point (the final policy), unless the last rollout's end just took it."""
        last = self.writer.last_steps
        if last is None or last < model.num_timesteps:
            self.evaluate(model, model.num_timesteps)


#: the root seed of the held-out generated systems of a learning curve (plus ``--seed``)
HELD_OUT_SYSTEMS_SEED = 7_000_000


def training_systems_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The training systems as env keywords (scenario, load, k) for the curve's episodes."""
    return [dict(s) for s in training_systems(args)]


def _describe(system: dict[str, Any]) -> dict[str, Any]:
    """A system of the curve as JSON: a generated workload by its name and load."""
    out = {}
    for key, value in system.items():
        if key == "scenario" and not isinstance(value, str):
            out[key] = getattr(value, "name", type(value).__name__)
            out["load"] = round(float(value.load), 6)
            out["num_servers"] = int(value.num_servers)
        else:
            out[key] = value
    return out


def _mask_kwargs(model: Any, masks: Any) -> dict[str, Any]:
    """``action_masks=`` for a MaskablePPO model (PPO and DQN take none: a masked action is "wait")."""
    import inspect

    return {"action_masks": masks} if "action_masks" in inspect.signature(model.predict).parameters else {}


PROG = "python -m msj_gym.agents.train"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from msj_gym.agents._cli import ArgumentParser

    ap = ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    _add_env_flags(ap)
    _add_algorithm_flags(ap)
    _add_cost_flags(ap)
    _add_imitation_flags(ap)
    _add_curve_flags(ap)
    _add_output_flags(ap)
    recipe = _recipe_argument(argv)
    if recipe is not None:
        from msj_gym.agents.recipes import apply_recipe

        apply_recipe(ap, recipe)
    args = ap.parse_args(argv)
    if args.list_recipes:
        return args
    if args.out is None:
        if args.recipe is None:
            ap.error("the following arguments are required: --out")
        name = Path(args.recipe).stem if args.recipe.endswith(".toml") else args.recipe
        args.out = Path(f"{name}.zip")
    _parse_lists(ap, args)
    _check_combinations(ap, args)
    if args.env_id in MODEL_ENVS:
        _refuse_msj_options(ap, args)
    _check_args(args)
    return args


def _add_env_flags(ap: argparse.ArgumentParser) -> None:
    from msj_gym.agents._cli import add_queue_window

    g = ap.add_argument_group("the environment")
    g.add_argument(
        "--env-id",
        choices=ENV_IDS,
        default="MSJ-v0",
        help="the env trained in (MSJMoldable-v0 and CompatAssign-v0: the other models' envs)",
    )
    g.add_argument("--scenario", default="sf-fig2", help="a scenario, or a comma list of them")
    g.add_argument("--load", default=None, help="a load, or a comma list of loads")
    g.add_argument("--k", default=None, help="the number of servers, or a comma list")
    g.add_argument(
        "--blocking-cost",
        type=float,
        default=2.0,
        help="MSJMoldable-v0: the price of a lost job in execution-time units",
    )
    g.add_argument("--episode-arrivals", type=int, default=1000, help="arrivals per training episode")
    add_queue_window(g)
    g.add_argument(
        "--preempt-window", type=int, default=4, help="MSJPreemptive-v0: preempt actions per class"
    )
    g.add_argument(
        "--obs-jobs",
        type=int,
        default=8,
        help="oldest waiting jobs in the observation (0: class counts only)",
    )
    g.add_argument(
        "--observation",
        choices=("flat", "dict", "classes"),
        default="flat",
        help="the observation's form (classes: the class-set observation of --policy class-set)",
    )
    g.add_argument(
        "--actions",
        choices=("jobs", "priority", "priority-shortest"),
        default="jobs",
        help="an action starts a job, or names the class served first (priority-shortest: its shortest "
        "waiting jobs first, instead of its oldest)",
    )
    g.add_argument(
        "--systems",
        type=int,
        default=0,
        help="train on this many generated systems, one drawn per episode (needs --observation classes)",
    )
    g.add_argument(
        "--advisor",
        type=lambda text: [a.strip() for a in text.split(",")],
        default=None,
        help="comma-separated policies whose decision the agent may take as one action each (with "
        "--actions priority): the agent learns when to follow which, and when to decide itself",
    )


def _add_algorithm_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("the algorithm and its network")
    g.add_argument(
        "--algo",
        choices=ALGOS,
        default="maskable-ppo",
        help="maskable-ppo samples valid actions only; with ppo and dqn a masked action is a wait",
    )
    g.add_argument(
        "--policy",
        choices=("mlp", "class-set"),
        default="mlp",
        help="the network: an MLP, or the class-set network (with --observation classes)",
    )
    g.add_argument("--net-arch", type=int, nargs="+", default=[64, 64], help="hidden layer widths")
    g.add_argument("--timesteps", type=int, default=300_000, help="environment steps of training")
    g.add_argument("--n-envs", type=int, default=4, help="environments stepped side by side")
    g.add_argument(
        "--vec-env",
        choices=("dummy", "native"),
        default="dummy",
        help="SB3 DummyVecEnv of single envs, or the native batched vector env",
    )
    g.add_argument("--n-steps", type=int, default=2048, help="rollout length per env (PPO)")
    g.add_argument("--gamma", type=float, default=0.999, help="per decision; long: starvation costs late")
    g.add_argument("--gae-lambda", type=float, default=0.95, help="lambda of the advantage estimates (PPO)")
    g.add_argument("--ent-coef", type=float, default=0.0, help="weight of the entropy bonus (PPO)")
    g.add_argument("--batch-size", type=int, default=256, help="minibatch size of the updates")
    g.add_argument("--n-epochs", type=int, default=10, help="passes over each rollout (PPO)")
    g.add_argument("--learning-rate", type=float, default=3e-4, help="the optimiser's step size")
    g.add_argument(
        "--lr-schedule",
        choices=("constant", "linear"),
        default="constant",
        help="the learning rate throughout, or annealed linearly to 0 at --timesteps",
    )
    g.add_argument("--clip-range", type=float, default=0.2, help="PPO's clipping of the probability ratio")
    g.add_argument(
        "--vf-warmup",
        type=int,
        default=0,
        help="PPO: train only the value function for the first N steps (after --imitate: the cloned "
        "policy is not moved by the advantages of an untrained critic)",
    )
    g.add_argument("--threads", type=int, default=1, help="torch threads")
    g.add_argument(
        "--seed", type=int, default=0, help="seeds the training envs and the network (evaluation uses others)"
    )


def _add_cost_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("the cost the agent learns from")
    g.add_argument("--reward", choices=("integral", "mean"), default="mean", help="the env's reward form")
    g.add_argument(
        "--average-reward",
        action="store_true",
        help="differential rewards r - g*dt with g the running reward rate (msj_gym.agents.average_reward)",
    )
    g.add_argument(
        "--reward-scale",
        type=float,
        default=1.0,
        help="divide the differential rewards by this (with --average-reward)",
    )
    g.add_argument(
        "--lyapunov-weight",
        type=float,
        default=0.0,
        help="stabilising cost shaping: each step also pays minus W times the drift of sum_c n_c**P "
        "(msj_gym.env.wrappers.LyapunovShaping; 0: none)",
    )
    g.add_argument("--lyapunov-power", type=float, default=2.0, help="P of --lyapunov-weight")
    g.add_argument(
        "--lyapunov-of",
        choices=("jobs", "work"),
        default="jobs",
        help="the Lyapunov function: of the jobs per class (sum_c n_c**P), or of the work in the system "
        "((sum_c n_c * need_c * mean_c / k)**P)",
    )
    g.add_argument(
        "--cost-scale",
        default="none",
        help="divide the env's rewards by the system's mean service time ('service-time'), a number, "
        "or not ('none')",
    )


def _add_imitation_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("behaviour cloning before the RL")
    g.add_argument(
        "--imitate",
        default=None,
        help="maskable-ppo: clone this baseline's actions first ('advisor': the first --advisor's decisions)",
    )
    g.add_argument("--imitate-steps", type=int, default=50_000, help="decisions to clone")
    g.add_argument("--imitate-epochs", type=int, default=10, help="passes over the cloned decisions")


def _add_curve_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("the learning curve")
    g.add_argument(
        "--eval-every", type=int, default=0, help="evaluate on held-out episodes every N steps (0: never)"
    )
    g.add_argument("--eval-seeds", default="5000-5007", help="seeds of the held-out episodes")
    g.add_argument("--eval-arrivals", type=int, default=5000, help="arrivals per held-out episode")
    g.add_argument(
        "--eval-systems",
        type=int,
        default=8,
        help="with --systems: held-out generated systems of the curve (never drawn for training)",
    )
    g.add_argument(
        "--keep",
        choices=("last", "best"),
        default="last",
        help="the checkpoint saved as --out: the last one, or the best point of the learning curve",
    )


def _add_output_flags(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("checkpoints, progress and recipes")
    g.add_argument("--out", type=Path, default=None, help="checkpoint path (.zip; default: RECIPE.zip)")
    g.add_argument(
        "--save-every", type=int, default=0, help="keep a checkpoint every N steps (0: only the last)"
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars on stderr")
    g.add_argument(
        "--recipe",
        default=None,
        help="a shipped recipe's name (agents/recipes) or a .toml file: its keys are this "
        "command's flags, which the command line overrides",
    )
    g.add_argument("--list-recipes", action="store_true", help="list the shipped recipes and exit")


def _check_combinations(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The flags that only go with others; ``--cost-scale`` as a number where it is one."""
    if args.timesteps < 1:
        ap.error(f"--timesteps: expected a positive integer, got {args.timesteps}")
    if args.imitate is not None and args.algo != "maskable-ppo":
        ap.error("--imitate: only with --algo maskable-ppo")
    if args.imitate == "advisor" and not args.advisor:
        ap.error("--imitate advisor: needs --advisor (the policy whose decisions are cloned)")
    if args.average_reward and args.reward != "integral":
        ap.error("--average-reward: needs --reward integral (the rate is per unit of time)")
    if args.policy == "class-set" and (args.observation != "classes" or args.algo == "dqn"):
        ap.error("--policy class-set: needs --observation classes and --algo ppo or maskable-ppo")
    if args.systems < 0 or (args.systems and args.observation != "classes"):
        ap.error(f"--systems: expected 0 or a positive number with --observation classes, got {args.systems}")
    if args.advisor and not args.actions.startswith("priority"):
        ap.error(f"--advisor: only with --actions priority, got --actions {args.actions}")
    if args.systems and args.vec_env == "native":
        ap.error("--systems: with --vec-env dummy (the native vector env runs one system)")
    if len(training_systems(args)) > 1 and (args.systems or args.vec_env == "native"):
        ap.error("--scenario/--load/--k lists: not with --systems nor --vec-env native (one system each)")
    if args.cost_scale != "none":
        try:
            args.cost_scale = float(args.cost_scale)
        except ValueError:
            if args.cost_scale != "service-time":
                ap.error(f"--cost-scale {args.cost_scale!r}: expected 'none', 'service-time' or a number")
    if args.vf_warmup and args.algo == "dqn":
        ap.error("--vf-warmup: only with --algo ppo or maskable-ppo")


def _refuse_msj_options(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Another model's env (``--env-id`` in :data:`MODEL_ENVS`): no flag of the MSJ envs given."""
    msj_only = {
        "--queue-window": args.queue_window != 1,
        "--obs-jobs": args.obs_jobs != 8,
        "--observation": args.observation != "flat",
        "--actions": args.actions != "jobs",
        "--advisor": bool(args.advisor),
        "--systems": bool(args.systems),
        "--policy": args.policy != "mlp",
        "--average-reward": args.average_reward,
        "--lyapunov-weight": args.lyapunov_weight != 0,
        "--cost-scale": args.cost_scale != "none",
        "--eval-every": args.eval_every != 0,
    }
    for flag, given in msj_only.items():
        if given:
            ap.error(f"{flag}: an MSJ env's option, not of --env-id {args.env_id}")


def _recipe_argument(argv: list[str] | None) -> str | None:
    """The value of ``--recipe`` on the command line (read before the parse: the recipe sets the
    parser's defaults), or None."""
    tokens = sys.argv[1:] if argv is None else list(argv)
    found = None
    for i, token in enumerate(tokens):
        if token == "--recipe" and i + 1 < len(tokens):
            found = tokens[i + 1]
        elif token.startswith("--recipe="):
            found = token.split("=", 1)[1]
    return found


def _parse_lists(ap: Any, args: argparse.Namespace) -> None:
    """``--scenario``, ``--load`` and ``--k`` as lists (``args.scenarios``, ``args.loads``, ``args.ks``);
    ``args.load`` and ``args.k`` keep the first item (None if not given)."""

    def items(flag: str, text: str | None, kind: Any) -> list[Any]:
        if text is None:
            return []
        out = []
        for part in str(text).split(","):
            try:
                out.append(kind(part.strip()))
            except ValueError:
                ap.error(f"{flag} {text!r}: expected a {kind.__name__} or a comma list of them, got {part!r}")
        if len(set(out)) != len(out):
            ap.error(f"{flag} {text!r}: an item is repeated")
        return out

    args.scenarios = items("--scenario", args.scenario, str)
    if not all(args.scenarios):
        ap.error(f"--scenario {args.scenario!r}: an empty name")
    args.loads = items("--load", args.load, float)
    args.ks = items("--k", args.k, int)
    args.scenario = args.scenarios[0]
    args.load = args.loads[0] if args.loads else None
    args.k = args.ks[0] if args.ks else None


def _check_args(args: argparse.Namespace) -> None:
    """Every number and path before any work: one line naming the flag and its value."""
    from msj_gym.agents._cli import (
        UsageError,
        check_count,
        check_load,
        check_net_arch,
        check_number,
        check_output,
    )
    from msj_gym.workloads.workload import MAX_SERVERS

    for load in args.loads:
        check_load("--load", load)
    for k in args.ks:
        check_count("--k", k, 1, MAX_SERVERS)
    check_number("--blocking-cost", args.blocking_cost, 0.0, 1e6)
    check_count("--timesteps", args.timesteps, 1, 10**10)
    check_count("--episode-arrivals", args.episode_arrivals, 2, 10**8)
    check_count("--queue-window", args.queue_window, 1, 1024)
    check_count("--preempt-window", args.preempt_window, 1, 1024)
    check_count("--obs-jobs", args.obs_jobs, 0, 1024)
    check_count("--n-envs", args.n_envs, 1, 4096)
    check_count("--n-steps", args.n_steps, 1, 10**7)
    check_count("--batch-size", args.batch_size, 1, 10**7)
    check_count("--n-epochs", args.n_epochs, 1, 10**4)
    check_count("--threads", args.threads, 1, 1024)
    check_count("--imitate-steps", args.imitate_steps, 1, 10**8)
    check_count("--imitate-epochs", args.imitate_epochs, 1, 10**4)
    check_count("--seed", args.seed, 0, 2**32 - 1)  # SB3 seeds NumPy's legacy generator
    check_count("--save-every", args.save_every, 0, 10**10)
    check_net_arch("--net-arch", args.net_arch)
    check_number("--gamma", args.gamma, 0.0, 1.0, open_lo=True)
    check_number("--gae-lambda", args.gae_lambda, 0.0, 1.0)
    check_number("--ent-coef", args.ent_coef, 0.0, 100.0)
    check_number("--learning-rate", args.learning_rate, 0.0, 10.0, open_lo=True)
    check_number("--reward-scale", args.reward_scale, 0.0, 1e12, open_lo=True)
    check_number("--lyapunov-weight", args.lyapunov_weight, 0.0, 1e12)
    check_number("--lyapunov-power", args.lyapunov_power, 1.0, 8.0)
    if isinstance(args.cost_scale, float):
        check_number("--cost-scale", args.cost_scale, 0.0, 1e12, open_lo=True)
    check_number("--clip-range", args.clip_range, 0.0, 10.0, open_lo=True)
    check_count("--vf-warmup", args.vf_warmup, 0, 10**10)
    check_count("--eval-every", args.eval_every, 0, 10**10)
    check_count("--eval-arrivals", args.eval_arrivals, 100, 10**7)
    check_count("--eval-systems", args.eval_systems, 1, 1000)
    from msj_gym.agents.evaluate import parse_seeds

    try:
        args.eval_seed_list = parse_seeds(args.eval_seeds)
    except ValueError as exc:
        raise UsageError(str(exc).replace("--seeds", "--eval-seeds")) from None
    if args.keep == "best" and not args.eval_every:
        raise UsageError("--keep best: needs a learning curve (--eval-every N)")
    check_output("--out", args.out, ".zip")  # written after the training: checked before it


def _training_envs(
    args: argparse.Namespace, env_kwargs: dict[str, Any], systems: list[dict[str, Any]]
) -> Any:
    """The vector env the agent trains in: generated systems (``--systems``), the systems of the comma
    lists, the native batched env, or SB3's ``DummyVecEnv`` of one system; with ``--average-reward``
    its rewards differential. With ``--systems``, ``env_kwargs`` loses the system's keywords (each
    episode draws its own), for the checkpoint's ``.json`` too."""
    from stable_baselines3.common.env_util import make_vec_env

    # Training seeds come from --seed; evaluation uses other seeds (agents/evaluate.py).
    if args.systems:
        from msj_gym.agents.systems_env import SystemsEnv
        from msj_gym.workloads.generator import sample_systems

        # the generalist's training systems (msj_gym.agents.generalist draws the same ones from --seed)
        sampled = sample_systems(args.seed, args.systems)
        for key in ("scenario", "load", "num_servers"):
            env_kwargs.pop(key, None)
        kwargs = dict(env_kwargs)
        venv = make_vec_env(
            lambda: SystemsEnv(sampled, args.env_id, **kwargs),
            n_envs=args.n_envs,
            seed=args.seed,
            wrapper_class=reward_wrappers(args),
        )
    elif len(systems) > 1:
        from msj_gym.agents.systems_env import SystemsEnv

        base = {k: v for k, v in env_kwargs.items() if k not in systems[0]}
        venv = make_vec_env(
            lambda: SystemsEnv(systems, args.env_id, **base),
            n_envs=args.n_envs,
            seed=args.seed,
            wrapper_class=reward_wrappers(args),
        )
    elif args.vec_env == "native":
        from msj_gym.agents.vec_env import MSJSB3VecEnv

        venv = MSJSB3VecEnv(
            args.n_envs, env_id=args.env_id, wrap=reward_wrappers(args, vector=True), **env_kwargs
        )
        venv.seed(args.seed)
    else:
        venv = make_vec_env(
            f"msj_gym:{args.env_id}",
            n_envs=args.n_envs,
            seed=args.seed,
            env_kwargs=env_kwargs,
            wrapper_class=reward_wrappers(args),
        )
    if args.average_reward:
        from msj_gym.agents.average_reward import DifferentialReward

        # across systems each system has its own reward rate
        per_system = bool(args.systems) or len(systems) > 1
        venv = DifferentialReward(venv, scale=args.reward_scale, per_system=per_system)
    return venv


def _callbacks(
    model: Any, args: argparse.Namespace, env_kwargs: dict[str, Any], systems: int, meta: dict[str, Any]
) -> tuple[list[Any], CurveCallback | None]:
    """What runs beside the training: the progress bar, the value warm-up, the learning curve (also
    returned, None without ``--eval-every``) and the intermediate checkpoints; ``meta`` is the run's
    ``.json`` as far as it is known before training."""
    callbacks = [progress_callback(args.timesteps, args.progress)]
    if args.vf_warmup:
        callbacks.append(value_warmup_callback(model, args.vf_warmup))
    curve = None
    if args.eval_every:
        curve = CurveCallback(args, env_kwargs, training_systems=systems, meta=meta)
        meta["learning_curve"] = curve.path.name
        callbacks.append(curve.callback())
    if args.save_every:
        # long runs keep intermediate checkpoints, so that a killed run is not lost (data only, as every
        # checkpoint msj_gym writes), each an agent with its .json
        folder = Path(str(args.out.with_suffix("")) + "-steps")
        every = max(1, args.save_every // args.n_envs)
        callbacks.append(checkpoint_callback(every, folder, args.algo, {**meta, "kept": None}))
    return callbacks, curve


def _run_meta(
    args: argparse.Namespace,
    argv: list[str] | None,
    env_kwargs: dict[str, Any],
    systems: list[dict[str, Any]],
    accuracy: float | None,
) -> dict[str, Any]:
    """The run's ``.json`` (beside each checkpoint it writes) as far as it is known before training:
    the command, the env it acts in and the settings; the learning curve's file, the kept point and
    the wall time are filled in as they become known."""
    import msj_gym

    return {
        "command": "python -m msj_gym.agents.train " + " ".join(sys.argv[1:] if argv is None else argv),
        "algo": args.algo,
        "env_id": args.env_id,
        "env_kwargs": env_kwargs,
        "vec_env": args.vec_env,
        "policy": args.policy,
        "training_systems": args.systems or (systems if len(systems) > 1 else None),
        "average_reward": args.average_reward,
        "timesteps": args.timesteps,
        "seed": args.seed,
        "imitated": args.imitate,
        "imitation_accuracy": accuracy,
        "recipe": args.recipe,
        "lyapunov_weight": args.lyapunov_weight,
        "lyapunov_power": args.lyapunov_power,
        "lyapunov_of": args.lyapunov_of,
        "cost_scale": args.cost_scale,
        "learning_curve": None,
        "kept": None,
        "train_wall_seconds": None,
        "msj_gym_version": msj_gym.__version__,
    }


def _list_recipes() -> None:
    from msj_gym.agents.recipes import read_recipe, recipe_names

    for name in recipe_names():
        print(f"{name}: {read_recipe(name)[1].get('description', '')}")


def main(argv: list[str] | None = None) -> Path | None:
    args = parse_args(argv)
    if args.list_recipes:
        _list_recipes()
        return None
    import gymnasium as gym
    import torch

    torch.set_num_threads(args.threads)

    env_kwargs = make_env_kwargs(args)
    systems = training_systems(args)
    for system in systems:  # bad keywords fail here, before any worker starts
        gym.make(args.env_id, **{**env_kwargs, **system}).close()
    venv = _training_envs(args, env_kwargs, systems)
    model = build_model(args.algo, venv, args.seed, args)
    from stable_baselines3.common.logger import Logger

    # SB3's default logger leaves an empty folder in the temp directory on every run; verbose is 0, so
    # a logger with no outputs loses nothing (the progress bar says where training is)
    model.set_logger(Logger(None, []))
    t0 = time.perf_counter()
    accuracy = imitate(model, args, env_kwargs) if args.imitate else None
    from msj_gym.agents.checkpoint import write_checkpoint
    from msj_gym.atomic import atomic_write_text

    meta = _run_meta(args, argv, env_kwargs, systems, accuracy)
    callbacks, curve = _callbacks(model, args, env_kwargs, len(systems), meta)
    model.learn(total_timesteps=args.timesteps, callback=callbacks)
    wall = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if curve is not None:
        curve.final(model)
    last = args.out if args.keep == "last" else args.out.with_name(args.out.stem + "-last.zip")
    # --keep best: the curve wrote the best point's checkpoint as it found it; its .json is completed here
    kept = curve.best if args.keep == "best" and curve is not None else None
    meta.update(
        kept=None if kept is None else {"steps": kept["steps"], "curve_value": kept["mean_response_time"]},
        train_wall_seconds=round(wall, 1),
        complete=True,
    )
    # a full disk leaves no truncated checkpoint; the last checkpoint is an agent too
    write_checkpoint(model, last, meta if last == args.out else {**meta, "kept": None}, args.algo)
    if last != args.out:
        atomic_write_text(args.out.with_suffix(".json"), json.dumps(meta, indent=2) + "\n")
    print(f"trained {args.algo} for {args.timesteps} steps in {wall:.0f} s -> {args.out}")
    return args.out


if __name__ == "__main__":
    from msj_gym.agents._cli import run_script

    sys.exit(run_script(PROG, main))
