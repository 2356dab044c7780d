"""Write ``tests/golden/agent_decisions.npz``: what each shipped agent decides on a fixed set of
observations, read from the checkpoints as stable-baselines3 saved them (pickles, trusted here: they are
the project's own, as shipped up to the conversion to the data-only form).

For every shipped network agent: 24 observations of its own env (seed 0, actions drawn uniformly among
the valid ones by a Generator seeded 0), their masks, the network's action probabilities on them and its
deterministic actions (the class-set networks with their simulated selection set aside: the network
alone; the selection's settings are compared through the policy's keywords), and a digest of its weights.
``tests/agents/test_checkpoint.py`` checks that the data-only checkpoints decide exactly so.

    python -m tests.golden.make_agent_decisions --trust-pickle DIR   # DIR: the SB3 checkpoints
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a file: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

GOLDEN = Path(__file__).with_name("agent_decisions.npz")
OBSERVATIONS = 24


def weights_digest(policy: Any) -> str:
    h = hashlib.sha256()
    for name, value in sorted(policy.state_dict().items()):
        h.update(name.encode() + value.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def observations(meta: dict[str, Any], count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` observations and masks of the agent's env on seed 0, valid actions drawn at random."""
    import gymnasium as gym

    import msj_gym  # noqa: F401  (registers the envs)

    env = gym.make(meta.get("env_id", "MSJ-v0"), **{**meta.get("env_kwargs", {}), "num_arrivals": 4000})
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    seen, masks = [], []
    while len(seen) < count:
        mask = np.asarray(info["action_mask"], dtype=bool)
        seen.append(np.asarray(obs, dtype=np.float32))
        masks.append(mask)
        # a few steps between two kept observations, so that they are not all at the start
        for _ in range(7):
            action = int(rng.choice(np.flatnonzero(mask)))
            obs, _, terminated, truncated, info = env.step(action)
            mask = np.asarray(info["action_mask"], dtype=bool)
            if terminated or truncated:
                obs, info = env.reset(seed=len(seen))
                break
    return np.stack(seen), np.stack(masks)


def decisions(model: Any, obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The network's action probabilities (masked) and deterministic actions."""
    import torch

    policy = model.policy
    extractor = getattr(policy, "mlp_extractor", None)
    if getattr(extractor, "simulated", None) is not None:
        extractor.simulated = None  # the network alone (see the module docstring)
    with torch.no_grad():
        dist = policy.get_distribution(torch.as_tensor(obs), action_masks=masks)
        probs = dist.distribution.probs.numpy()
    return probs, probs.argmax(axis=1)


def main(argv: list[str] | None = None) -> None:
    from msj_gym.agents.checkpoint import load_model

    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--trust-pickle", action="store_true", required=True)
    args = ap.parse_args(argv)
    out: dict[str, np.ndarray] = {}
    for path in sorted(args.folder.glob("*.zip")):
        meta = json.loads(path.with_suffix(".json").read_text())
        if meta.get("algo") != "maskable-ppo":
            continue  # the scored agents are weights.json: data already
        model = load_model(path, allow_pickle=True)
        obs, masks = observations(meta, OBSERVATIONS)
        probs, actions = decisions(model, obs, masks)
        name = path.stem
        out[f"{name}/obs"], out[f"{name}/masks"] = obs, masks
        out[f"{name}/probs"], out[f"{name}/actions"] = probs, actions
        out[f"{name}/weights"] = np.array(weights_digest(model.policy))
        kwargs = {k: v for k, v in model.policy_kwargs.items() if k != "device"}
        out[f"{name}/policy_kwargs"] = np.array(json.dumps(kwargs, sort_keys=True))
        print(f"{name}: {len(obs)} observations, actions {actions.tolist()}")
    np.savez_compressed(GOLDEN, **out)
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
