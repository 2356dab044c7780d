"""A CleanRL-style PPO loop (one file, read top to bottom) with invalid-action masking, on msj_gym's
native vector env ``gym.make_vec("MSJ-v0", num_envs=N)``.

``autoreset_mode="SameStep"``: an env that ends an episode returns the next episode's first observation
in the same step (the last one is in ``info["final_obs"]``), the convention CleanRL's loop is written
for. Rewards are ``reward="mean"`` (an episode's return is about minus its mean response time).

Run: ``python examples/cleanrl_ppo.py`` (needs ``pip install -e ".[rl]"`` for torch).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import msj_gym  # noqa: F401  registers MSJ-v0


@dataclass
class Args:
    seed: int = 1
    num_envs: int = 16
    num_steps: int = 128  # steps per env per rollout
    total_timesteps: int = 200_000
    learning_rate: float = 2.5e-4
    gamma: float = 0.999
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    num_arrivals: int = 200  # per episode


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

    def get_action_and_value(
        self, x: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        # masked actions get no probability: their logits go to the dtype's lowest value
        logits = self.actor(x).masked_fill(~mask, torch.finfo(torch.float32).min)
        dist = Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def main(args: Args | None = None) -> dict[str, float]:
    args = args or Args()
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = args.total_timesteps // batch_size
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)

    envs = gym.make_vec(
        "MSJ-v0", num_envs=args.num_envs, autoreset_mode="SameStep", reward="mean",
        num_arrivals=args.num_arrivals,
    )  # fmt: skip
    n_obs = envs.single_observation_space.shape[0]
    n_actions = envs.single_action_space.n
    agent = Agent(n_obs, n_actions)
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
    episode_returns: list[float] = []
    response_times: list[float] = []
    masked_taken = 0
    next_obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
    next_mask = torch.as_tensor(envs.unwrapped.action_masks())
    next_done = torch.zeros(args.num_envs)
    ep_return = np.zeros(args.num_envs)
    v_loss = pg_loss = torch.tensor(0.0)

    for iteration in range(1, num_iterations + 1):
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            masked_taken += int((~next_mask.gather(1, action[:, None])).sum())

            next_obs_np, reward, terminations, truncations, infos = envs.step(action.numpy())
            next_done_np = np.logical_or(terminations, truncations)
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
            next_mask = torch.as_tensor(envs.unwrapped.action_masks())
            next_done = torch.as_tensor(next_done_np, dtype=torch.float32)
            ep_return += reward
            for i in np.flatnonzero(next_done_np):
                episode_returns.append(float(ep_return[i]))
                response_times.append(float(infos["final_info"]["mean_response_time"][i]))
                ep_return[i] = 0.0

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
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        recent = response_times[-20:]
        print(
            f"iteration {iteration}/{num_iterations}: step {global_step}, "
            f"{int(global_step / (time.time() - start_time))} steps/s, episodes {len(response_times)}, "
            f"mean response time (last 20) {np.mean(recent) if recent else float('nan'):.3f}"
        )
    envs.close()
    return {
        "steps": float(global_step),
        "episodes": float(len(episode_returns)),
        "mean_response_time": float(np.mean(response_times[-20:])) if response_times else float("nan"),
        "masked_actions_taken": float(masked_taken),
        "value_loss": v_loss.item(),
        "policy_loss": pg_loss.item(),
    }


if __name__ == "__main__":
    main()
