"""Learned schedulers as leaderboard entrants: load an agent from a spec and run it through the env.

An agent spec is either

* the name of an agent shipped with the package (``agents/checkpoints/<name>.zip``, e.g.
  ``maskable-ppo-sf-fig2-0.7``; :func:`shipped_agents` lists them), usable from any directory;
* the path of a stable-baselines3 checkpoint (``.zip``). The algorithm and the env keywords it was
  trained with come from the ``.json`` beside it (written by ``agents/train.py``); without one, the
  algorithms MaskablePPO, PPO, A2C and DQN are tried in turn and the env's defaults are used; or
* ``module:attr``: an importable object with an SB3-style ``predict`` (``action_masks=`` optional), or
  a callable that returns one when given the environment (e.g. ``msj_gym.env:RandomAgent``).

A run replaces the training workload and run length by the point's (scenario, load, arrivals,
warm-up, seed) and keeps every other env keyword (observation layout, windows), so the agent sees the
observation it was trained on, and the same job stream as every policy for that seed.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["AgentSpec", "agent_label", "load_agent", "run_agent", "shipped_agents"]

# env keywords that a leaderboard point sets; the rest come from the agent's training
_POINT_KEYS = ("scenario", "num_servers", "load", "arrival_rate", "num_arrivals", "horizon", "warmup")
_SB3_ALGOS = (
    ("maskable-ppo", "sb3_contrib", "MaskablePPO"),
    ("ppo", "stable_baselines3", "PPO"),
    ("a2c", "stable_baselines3", "A2C"),
    ("dqn", "stable_baselines3", "DQN"),
)


class AgentSpec:
    """A loaded agent: its ``predict`` object, the env id and the env keywords it expects."""

    def __init__(self, spec: str, model: Any, env_id: str, env_kwargs: dict[str, Any], factory: bool) -> None:
        self.spec = spec
        self.model = model
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.factory = factory  # model is a callable env -> agent

    def make_env(self, scenario: str, build: dict[str, Any], num_arrivals: int, warmup: int) -> Any:
        import gymnasium as gym

        import msj_gym  # noqa: F401  (registers the envs)

        kwargs = {k: v for k, v in self.env_kwargs.items() if k not in _POINT_KEYS}
        kwargs.update(build, scenario=scenario, num_arrivals=num_arrivals, warmup=warmup)
        return gym.make(self.env_id, **kwargs)

    def agent_for(self, env: Any, seed: int = 0) -> Any:
        """The agent acting in ``env``; a factory that takes ``seed`` gets the point's seed, so that a
        randomised agent is reproducible."""
        if not self.factory:
            return self.model
        import inspect

        try:
            takes_seed = "seed" in inspect.signature(self.model).parameters
        except (TypeError, ValueError):
            takes_seed = False
        return self.model(env, seed=seed) if takes_seed else self.model(env)


def agent_label(spec: str) -> str:
    """The name an agent gets in tables: ``agent:<file stem>``, ``agent:<shipped name>`` or
    ``agent:<attr>`` (a shipped name keeps its dots: ``maskable-ppo-sf-fig2-0.7``)."""
    if ":" in spec and not Path(spec).suffix == ".zip":
        return f"agent:{spec.rsplit(':', 1)[1]}"
    if spec in shipped_agents() and not Path(spec).exists():
        return f"agent:{spec}"
    return f"agent:{Path(spec).stem}"


def _shipped_dir() -> Path | None:
    try:
        from importlib.resources import files

        folder = Path(str(files("agents") / "checkpoints"))
    except (ImportError, TypeError):
        return None
    return folder if folder.is_dir() else None


def shipped_agents() -> dict[str, Path]:
    """The checkpoints installed with the package, by name (the file stem)."""
    folder = _shipped_dir()
    if folder is None:
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.zip"))}


@cache
def load_agent(spec: str) -> AgentSpec:
    """Load ``spec`` (cached per process). Raises ``ValueError`` naming the spec when it does not load."""
    if spec.endswith(".zip") or Path(spec).exists():
        return _load_checkpoint(spec)
    if ":" in spec:
        return _load_object(spec)
    shipped = shipped_agents()
    if spec in shipped:
        return _load_checkpoint(str(shipped[spec]))
    names = ", ".join(shipped) or "none installed"
    raise ValueError(
        f"--agent {spec!r}: no such file, not a shipped agent ({names}), and not a 'module:attr' spec"
    )


def _load_checkpoint(spec: str) -> AgentSpec:
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"--agent {spec!r}: no such file")
    meta_path = path.with_suffix(".json")
    meta: dict[str, Any] = {}
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"--agent {spec!r}: its metadata {str(meta_path)!r} is not JSON ({exc})"
            ) from None
    algos = [a for a in _SB3_ALGOS if a[0] == meta.get("algo")] if "algo" in meta else list(_SB3_ALGOS)
    if not algos:
        known = ", ".join(a[0] for a in _SB3_ALGOS)
        raise ValueError(
            f"--agent {spec!r}: unknown algo {meta['algo']!r} in {meta_path.name}; known: {known}"
        )
    errors = []
    for name, module, cls_name in algos:
        try:
            algo = getattr(importlib.import_module(module), cls_name)
        except ImportError:
            errors.append(f"{name}: {module} is not installed (pip install -e '.[rl]')")
            continue
        try:
            import torch

            # an agent's decision is a small forward pass: more threads only contend with the other
            # workers of a leaderboard
            torch.set_num_threads(1)
            model = algo.load(path, device="cpu")
        except Exception as exc:  # SB3 raises many kinds on a file that is not its checkpoint
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        return AgentSpec(spec, model, meta.get("env_id", "MSJ-v0"), dict(meta.get("env_kwargs", {})), False)
    raise ValueError(
        f"--agent {spec!r}: does not load as a stable-baselines3 checkpoint ({'; '.join(errors)})"
    )


def _load_object(spec: str) -> AgentSpec:
    from ..registry import import_object

    obj = import_object(spec, "--agent")
    if hasattr(obj, "predict") and not isinstance(obj, type):
        return AgentSpec(spec, obj, "MSJ-v0", {}, False)
    if callable(obj):
        return AgentSpec(spec, obj, "MSJ-v0", {}, True)
    raise ValueError(f"--agent {spec!r}: expected an object with predict() or a callable env -> agent")


def check_agent(spec: str, scenario: str, build: dict[str, Any]) -> None:
    """Fail early, in the parent process, if ``spec`` does not load or does not fit ``scenario``'s env
    (e.g. a checkpoint trained on a workload with another number of classes)."""
    loaded = load_agent(spec)
    env = loaded.make_env(scenario, build, num_arrivals=100, warmup=0)
    try:
        agent = loaded.agent_for(env)
        space = getattr(agent, "observation_space", None)
        if space is not None and space != env.observation_space:
            raise ValueError(
                f"--agent {spec!r}: trained on observations {space}, but scenario {scenario!r} gives "
                f"{env.observation_space} (another number of classes or window sizes)"
            )
        action_space = getattr(agent, "action_space", None)
        if action_space is not None and action_space != env.action_space:
            raise ValueError(
                f"--agent {spec!r}: trained with actions {action_space}, but scenario {scenario!r} "
                f"has {env.action_space}"
            )
    finally:
        env.close()


def run_agent(point: Any) -> Any:
    """Run ``point.agent`` through the env on the point's workload and seed; the SimulationResult."""
    from ..env.agents import rollout

    loaded = load_agent(point.agent)
    warmup = point.warmup if point.warmup is not None else point.num_arrivals // 10
    env = loaded.make_env(point.scenario, dict(point.build), point.num_arrivals, warmup)
    try:
        return rollout(env, loaded.agent_for(env, point.seed), seed=point.seed)
    except Exception as exc:  # an agent's own failure (a bad action, an error in predict) names it
        what = " ".join(str(exc).split()) or type(exc).__name__
        raise ValueError(
            f"--agent {point.agent!r} failed on {point.scenario} at load {point.build.get('load')} "
            f"(seed {point.seed}): {type(exc).__name__}: {what}"
        ) from exc
    finally:
        env.close()
