"""PPO for the long-run average cost, in one file (CleanRL's layout, read top to bottom), on msj_gym's
native vector env ``gym.make_vec("MSJ-v0", num_envs=N)``: the method of the recipe ``ppo-sf-fig2-0.7``
(``python -m msj_gym.agents.train --recipe ppo-sf-fig2-0.7``), written out.

What it takes beyond CleanRL's PPO, and why:

1. **Masks.** Invalid actions get the lowest logit, so the policy never samples them.
2. **Average cost, not a discounted sum.** The env pays ``-(time integral of the jobs in the system)``
   per decision (``reward="integral"``), and decisions are unevenly spaced in time. The loop learns from
   the *differential* reward ``r - g * dt``, ``g`` a running estimate of the reward per unit time and
   ``dt`` the step's ``info["elapsed_time"]``, with a discount close to 1: the value function then learns
   relative values, as in Dai & Gluzman's PPO for queueing networks (Stochastic Systems, 2022).
3. **Stabilising cost shaping** (Pavse et al., ICML 2024): each step also pays minus the drift of a
   Lyapunov function, here the squared work in the system (``LyapunovShapingVector``), so that a
   decision that leaves servers idle while work waits is charged at once.
4. **Truncation is not termination.** MSJ episodes only ever end by truncation (the system has no
   natural end), so the value of the last state is bootstrapped: ``r += gamma * V(final_obs)`` at the
   step that ends an episode, and the advantage does not run on into the next episode.
   ``autoreset_mode="SameStep"`` gives the last observation in ``info["final_obs"]`` and the next
   episode's first one in the same step.
5. **A warm start from a heuristic's decisions** (never from the exact optimum): the policy first
   clones First-Fit's decisions (behaviour cloning), and PPO's first updates fit only the value
   function (``vf_warmup``), so that the clone is not moved by an untrained critic's advantages.
6. **A learning curve**: every ``eval_every`` steps the greedy policy's mean response time on held-out
   seeds (``msj_gym.agents.learning_curve``), written to ``curve`` as JSON lines; the best point's
   policy is kept and saved to ``save`` as msj_gym's data-only checkpoint, which ``msj-gym leaderboard
   --agent PATH`` runs as it runs the recipe's.

Run: ``python examples/cleanrl_ppo.py [--seed N] [--total-timesteps N] [--curve FILE] [--save FILE]``
(needs ``pip install -e ".[rl]"`` for torch; writes ``cleanrl-ppo-curve.jsonl`` and ``cleanrl-ppo.zip``
with its ``.json``); its other settings, the fields of ``Args``, are the recipe's.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import msj_gym  # noqa: F401  registers MSJ-v0
from msj_gym.env.wrappers import LyapunovShapingVector


@dataclass
class Args:
    seed: int = 0
    # the environment: sf-fig2 (k = 8, need 1 or 8) at load 0.7, class counts, one job started per action
    scenario: str = "sf-fig2"
    load: float = 0.7
    actions: str = "jobs"
    obs_jobs: int = 0
    num_arrivals: int = 5000  # per training episode
    # PPO
    num_envs: int = 64
    num_steps: int = 256  # steps per env per rollout
    total_timesteps: int = 6_000_000
    learning_rate: float = 3e-4
    anneal_lr: bool = True  # linearly to 0 at total_timesteps
    gamma: float = 0.999
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    # average cost and shaping
    reward_scale: float = 5.0  # the differential rewards are divided by this
    rate_decay: float = 1e-3  # forgetting of the running reward-rate estimate, per step
    lyapunov_weight: float = 2.0
    lyapunov_power: float = 2.0
    lyapunov_of: str = "work"
    # warm start
    imitate: str | None = "first-fit"
    imitate_steps: int = 50_000
    imitate_epochs: int = 10
    vf_warmup: int = 500_000  # steps of value-only updates after the clone
    # learning curve
    eval_every: int = 500_000
    eval_seeds: list[int] = field(default_factory=lambda: list(range(5000, 5008)))
    eval_arrivals: int = 5000
    curve: Path | None = None  # JSON lines of the curve; None: kept in memory only
    save: Path | None = None  # the best point's policy (the last one without a curve) as a checkpoint


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, n_obs: int, n_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(n_obs, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )  # fmt: skip
        self.actor = nn.Sequential(
            layer_init(nn.Linear(n_obs, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, n_actions), std=0.01),
        )  # fmt: skip

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def logits(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # masked actions get no probability: their logits go to the dtype's lowest value
        return self.actor(x).masked_fill(~mask, torch.finfo(torch.float32).min)

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        dist = Categorical(logits=self.logits(x, mask))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)

    def greedy(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(obs, dtype=torch.float32)
            return self.logits(x, torch.as_tensor(masks)).argmax(dim=1).numpy()


def env_kwargs(args: Args) -> dict:
    return {
        "scenario": args.scenario, "load": args.load, "actions": args.actions, "obs_jobs": args.obs_jobs,
        "num_arrivals": args.num_arrivals, "reward": "integral",
    }  # fmt: skip


def bootstrap_truncated(
    rewards: np.ndarray, truncations: np.ndarray, infos: dict, value: Any, gamma: float
) -> np.ndarray:
    """Truncation, not termination: where an episode was cut off, add the discounted value of its last
    state (``info["final_obs"]``, SameStep autoreset) to the step's reward, as if it went on."""
    out = np.asarray(rewards, dtype=np.float64).copy()
    ended = np.flatnonzero(truncations)
    if ended.size:
        final = torch.as_tensor(np.stack(infos["final_obs"][ended]), dtype=torch.float32)
        with torch.no_grad():
            out[ended] += gamma * value(final).flatten().numpy()
    return out


def imitate(agent: Agent, args: Args) -> float:
    """Behaviour cloning: fit the actor to a heuristic's decisions through the env (on seeds far from
    the evaluation's). Returns the accuracy on the collected decisions."""
    from msj_gym import PolicyAgent

    env = gym.make("MSJ-v0", **env_kwargs(args)).unwrapped
    observations, masks, actions = [], [], []
    seed = 10**6 + args.seed
    obs, info = env.reset(seed=seed)
    teacher = PolicyAgent(args.imitate, env)
    while len(actions) < args.imitate_steps:
        action, _ = teacher.predict(obs)
        observations.append(obs)
        masks.append(info["action_mask"])
        actions.append(int(action))
        obs, _, _, truncated, info = env.step(action)
        if truncated:
            seed += 1
            obs, info = env.reset(seed=seed)
            teacher = PolicyAgent(args.imitate, env)
    x = torch.as_tensor(np.array(observations))
    m = torch.as_tensor(np.array(masks))
    a = torch.as_tensor(np.array(actions))
    optimizer = torch.optim.Adam(agent.actor.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(args.seed)
    for _ in range(args.imitate_epochs):
        for idx in torch.randperm(len(a), generator=gen).split(256):
            loss = nn.functional.cross_entropy(agent.logits(x[idx], m[idx]), a[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        return float((agent.logits(x, m).argmax(dim=1) == a).float().mean())


def evaluate(agent: Agent, args: Args) -> float:
    """The greedy policy's mean response time on the held-out seeds (inf if a run is unstable)."""
    from msj_gym.agents.learning_curve import Episodes, evaluate_greedy, summarise_episodes

    kwargs = env_kwargs(args)
    system = {"scenario": kwargs.pop("scenario"), "load": kwargs.pop("load")}
    episodes = Episodes([system], args.eval_seeds, args.eval_arrivals, kwargs)
    return summarise_episodes(evaluate_greedy(agent.greedy, episodes))["mean_response_time"]


def save_checkpoint(agent: Agent, args: Args, path: Path) -> None:
    """``agent`` as msj_gym's data-only checkpoint (``msj_gym.agents.checkpoint``): its layers put into
    stable-baselines3's MaskablePPO, whose default policy has the same two 64-unit tanh networks, with
    the env's keywords beside it (``.json``), so that the project's tools load it as they load the
    recipe's."""
    from sb3_contrib import MaskablePPO

    from msj_gym.agents.checkpoint import save_model

    env = gym.make("MSJ-v0", **env_kwargs(args))
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [64, 64], "activation_fn": nn.Tanh})
    sb3_names = {
        "actor.0": "mlp_extractor.policy_net.0",
        "actor.2": "mlp_extractor.policy_net.2",
        "actor.4": "action_net",
        "critic.0": "mlp_extractor.value_net.0",
        "critic.2": "mlp_extractor.value_net.2",
        "critic.4": "value_net",
    }
    state = {}
    for key, value in agent.state_dict().items():
        layer, _, param = key.rpartition(".")
        state[f"{sb3_names[layer]}.{param}"] = value
    model.policy.load_state_dict(state)  # strict: every weight has its place, and every place a weight
    save_model(model, path)
    meta = {"command": "python examples/cleanrl_ppo.py", "algo": "maskable-ppo", "env_id": "MSJ-v0"}
    Path(path).with_suffix(".json").write_text(json.dumps({**meta, "env_kwargs": env_kwargs(args)}, indent=2))


def main(args: Args | None = None) -> dict[str, float]:
    args = args or Args()
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = args.total_timesteps // batch_size
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)

    envs = gym.make_vec("MSJ-v0", num_envs=args.num_envs, autoreset_mode="SameStep", **env_kwargs(args))
    if args.lyapunov_weight:
        envs = LyapunovShapingVector(envs, args.lyapunov_weight, args.lyapunov_power, args.lyapunov_of)
    n_obs = envs.single_observation_space.shape[0]
    n_actions = envs.single_action_space.n
    agent = Agent(n_obs, n_actions)
    accuracy = imitate(agent, args) if args.imitate else float("nan")
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, n_obs))
    masks = torch.zeros((args.num_steps, args.num_envs, n_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    global_step = 0
    start_time = time.time()
    curve: list[tuple[int, float]] = [(0, evaluate(agent, args))] if args.eval_every else []
    best = copy.deepcopy(agent.state_dict())  # the policy of the curve's lowest point so far
    response_times: list[float] = []
    masked_taken = 0
    reward_sum = time_sum = 0.0  # the running reward rate g = reward_sum / time_sum
    next_obs_np, infos = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
    next_mask = torch.as_tensor(infos["action_mask"])
    next_done = torch.zeros(args.num_envs)
    v_loss = pg_loss = torch.tensor(0.0)

    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - (iteration - 1.0) / num_iterations)
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            masked_taken += int((~next_mask.gather(1, action[:, None])).sum())

            next_obs_np, reward, terminations, truncations, infos = envs.step(action.numpy())
            # the elapsed time of each env's step (of its episode's last step where one ended)
            dt = infos["elapsed_time"].copy()
            ended = np.flatnonzero(truncations)
            if ended.size:
                dt[ended] = infos["final_info"]["elapsed_time"][ended]
            reward_sum = (1 - args.rate_decay) * reward_sum + float(reward.sum())
            time_sum = (1 - args.rate_decay) * time_sum + float(dt.sum())
            g = reward_sum / time_sum if time_sum > 0 else 0.0
            differential = (reward - g * dt) / args.reward_scale
            differential = bootstrap_truncated(differential, truncations, infos, agent.get_value, args.gamma)
            if ended.size:
                response_times += infos["final_info"]["mean_response_time"][ended].tolist()
            rewards[step] = torch.as_tensor(differential, dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
            next_mask = torch.as_tensor(infos["action_mask"])
            # an ended episode stops the advantage here (its last value is already in the reward)
            next_done = torch.as_tensor(np.logical_or(terminations, truncations), dtype=torch.float32)

        # generalized advantage estimation
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        b_obs, b_masks = obs.reshape((-1, n_obs)), masks.reshape((-1, n_actions))
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        warmup = global_step <= args.vf_warmup  # value-only updates: the policy term is left out

        b_inds = np.arange(batch_size)
        for _epoch in range(args.update_epochs):
            rng.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                mb = b_inds[start : start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb]
                )
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio, -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                loss = v_loss * args.vf_coef
                if not warmup:
                    loss = loss + pg_loss - args.ent_coef * entropy.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        if args.eval_every and global_step // args.eval_every > (global_step - batch_size) // args.eval_every:
            curve.append((global_step, evaluate(agent, args)))
            if curve[-1][1] < min(v for _, v in curve[:-1]):
                best = copy.deepcopy(agent.state_dict())
            if args.curve is not None:
                _write_curve(args.curve, curve)
        recent = response_times[-20:]
        print(
            f"iteration {iteration}/{num_iterations}: step {global_step}, "
            f"{int(global_step / (time.time() - start_time))} steps/s, episodes {len(response_times)}, "
            f"mean response time (last 20) {np.mean(recent) if recent else float('nan'):.3f}"
            + (f", held-out {curve[-1][1]:.3f} (step {curve[-1][0]})" if curve else "")
        )
    envs.close()
    if args.save is not None:
        if curve:
            agent.load_state_dict(best)
        save_checkpoint(agent, args, args.save)
    return {
        "steps": float(global_step),
        "episodes": float(len(response_times)),
        "mean_response_time": float(np.mean(response_times[-20:])) if response_times else float("nan"),
        "held_out_mean_response_time": curve[-1][1] if curve else float("nan"),
        "imitation_accuracy": accuracy,
        "masked_actions_taken": float(masked_taken),
        "value_loss": v_loss.item(),
        "policy_loss": pg_loss.item(),
        "seconds": time.time() - start_time,
    }


def _write_curve(path: Path, curve: list[tuple[int, float]]) -> None:
    lines = [json.dumps({"steps": s, "mean_response_time": v if np.isfinite(v) else None}) for s, v in curve]
    Path(path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    import argparse

    cli = argparse.ArgumentParser(description="PPO for the long-run average cost on MSJ-v0, in one file.")
    add = cli.add_argument
    add("--seed", type=int, default=Args.seed, help="training seed (default %(default)s)")
    add("--total-timesteps", type=int, default=Args.total_timesteps, help="env steps (default %(default)s)")
    add("--curve", type=Path, default=Path("cleanrl-ppo-curve.jsonl"), help="the curve (default %(default)s)")
    add("--save", type=Path, default=Path("cleanrl-ppo.zip"), help="the kept policy (default %(default)s)")
    given = cli.parse_args()
    if given.total_timesteps < 1:
        cli.error(f"--total-timesteps: expected a positive integer, got {given.total_timesteps}")
    main(Args(seed=given.seed, total_timesteps=given.total_timesteps, curve=given.curve, save=given.save))
