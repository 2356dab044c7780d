"""TorchRL on MSJ-v0: ``GymEnv`` with the action mask read from ``info`` and applied by ``ActionMask``,
then a masked policy (``MaskedCategorical``) collecting an episode.

Run: ``python examples/torchrl_masked.py`` (a few seconds; TorchRL comes with the ``dev`` extra, or
alone with ``pip install -e ".[rl,torchrl]"``).
"""

from __future__ import annotations

import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.data import Binary
from torchrl.envs import GymEnv, TransformedEnv
from torchrl.envs.libs.gym import default_info_dict_reader
from torchrl.envs.transforms import ActionMask
from torchrl.modules import MaskedCategorical, ProbabilisticActor

import msj_gym  # noqa: F401  registers MSJ-v0


def make_env(**env_kwargs: object) -> TransformedEnv:
    """MSJ-v0 as a TorchRL env whose action spec follows the mask of every step."""
    env = GymEnv("MSJ-v0", categorical_action_encoding=True, **env_kwargs)
    # the mask is in info["action_mask"]; read it into the tensordict, where ActionMask looks for it,
    # with its spec (one boolean per action), which TorchRL cannot guess from the info dict
    mask_spec = Binary(env.action_spec.space.n, dtype=torch.bool)
    env.set_info_dict_reader(default_info_dict_reader(["action_mask"], spec={"action_mask": mask_spec}))
    return TransformedEnv(env, ActionMask())


def make_policy(env: TransformedEnv) -> ProbabilisticActor:
    """A small MLP over the observation whose categorical distribution gives masked actions no mass."""
    n_obs = env.observation_spec["observation"].shape[-1]
    n_actions = env.action_spec.space.n
    net = nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, n_actions))
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["logits"])
    return ProbabilisticActor(
        module,
        in_keys={"logits": "logits", "mask": "action_mask"},
        distribution_class=MaskedCategorical,
        spec=env.action_spec,
        return_log_prob=True,
    )


def main(num_arrivals: int = 1000, seed: int = 0) -> dict[str, float]:
    env = make_env(num_arrivals=num_arrivals)
    env.set_seed(seed)
    torch.manual_seed(seed)
    policy = make_policy(env)
    # one whole episode (rollout stops at done); max_steps is only a bound
    episode = env.rollout(max_steps=100 * num_arrivals, policy=policy)
    actions, masks = episode["action"], episode["action_mask"]
    result = env.base_env.unwrapped.result()  # the simulator's result (TorchRL forwards .unwrapped)
    out = {
        "steps": float(actions.shape[0]),
        "return": float(episode["next", "reward"].sum()),
        "masked_actions_taken": float((~masks.gather(-1, actions.unsqueeze(-1))).sum()),
        "mean_response_time": result.mean_response_time,
    }
    print(out)
    return out


if __name__ == "__main__":
    main()
