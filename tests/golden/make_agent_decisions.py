"""Write ``tests/golden/agent_decisions.npz``: what each shipped agent decides on a fixed set of
observations, read from the checkpoints as stable-baselines3 saved them (pickles, trusted here: they are
the project's own, as shipped up to the conversion to the data-only form).

For every shipped network agent: 24 observations of its own env (seed 0, actions drawn uniformly among
the valid ones by a Generator seeded 0), their masks, the network's action probabilities on them and its
deterministic actions (the class-set networks with their simulated selection set aside: the network
alone; the selection's settings are compared through the policy's keywords), and a digest of its weights.
``tests/agents/test_checkpoint.py`` checks that the data-only checkpoints decide exactly so.

    python -m tests.golden.make_agent_decisions --trust-pickle DIR   # DIR: the SB3 checkpoints
    python -m tests.golden.make_agent_decisions --add NAME           # a shipped agent saved data-only

An agent that training saved in the data-only form from the start (``ppo-sf-fig2-0.7``) has no pickle:
``--add`` pins its decisions as its checkpoint loads now, so that a later change of the loader or of
the policy classes that changes them fails the test.
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
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--trust-pickle", action="store_true")
    ap.add_argument("--add", default=None, help="a shipped agent saved data-only, added to the file")
    args = ap.parse_args(argv)
    if args.add is not None:
        _add(args.add)
        return
    if args.folder is None or not args.trust_pickle:
        ap.error("give the folder of the SB3 checkpoints and --trust-pickle, or --add NAME")
    out: dict[str, np.ndarray] = {}
    for path in sorted(args.folder.glob("*.zip")):
        meta = json.loads(path.with_suffix(".json").read_text())
        if meta.get("algo") != "maskable-ppo":
            continue  # the scored agents are weights.json: data already
        out.update(_entries(path.stem, load_model(path, allow_pickle=True), meta))
    np.savez_compressed(GOLDEN, **out)
    print(f"wrote {GOLDEN}")


def _entries(name: str, model: Any, meta: dict[str, Any]) -> dict[str, np.ndarray]:
    obs, masks = observations(meta, OBSERVATIONS)
    probs, actions = decisions(model, obs, masks)
    kwargs = {k: v for k, v in model.policy_kwargs.items() if k != "device"}
    print(f"{name}: {len(obs)} observations, actions {actions.tolist()}")
    return {
        f"{name}/obs": obs,
        f"{name}/masks": masks,
        f"{name}/probs": probs,
        f"{name}/actions": actions,
        f"{name}/weights": np.array(weights_digest(model.policy)),
        f"{name}/policy_kwargs": np.array(json.dumps(kwargs, sort_keys=True)),
    }


def _add(name: str) -> None:
    from msj_gym.agents.checkpoint import load_model
    from msj_gym.experiments.agents import shipped_agents

    path = shipped_agents()[name]
    meta = json.loads(path.with_suffix(".json").read_text())
    with np.load(GOLDEN) as old:
        out = {k: old[k] for k in old.files if not k.startswith(f"{name}/")}
    out.update(_entries(name, load_model(path), meta))
    np.savez_compressed(GOLDEN, **out)
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
